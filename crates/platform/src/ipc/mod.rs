//! The local endpoint `switchboard connect` reaches the running Switchboard through, open to
//! this user's processes only.
//!
//! Unix: a socket file in the runtime directory, which also carries the editor's stdio across
//! (`platform::passing`). Windows: a named pipe whose name is derived from the runtime
//! directory; its DACL admits the current user alone (and the AppContainer identity of Claude
//! Desktop's package, should it run the shim inside one), it refuses remote clients, the first
//! instance is created with `FILE_FLAG_FIRST_PIPE_INSTANCE` so that nobody can hold the name
//! before us unnoticed, and each side checks that the process at the other end runs as the same
//! user. A named pipe rather than loopback HTTP: it needs no port and no token, so the shim reads
//! no file (Claude Desktop's MSIX package redirects reads and writes under `%APPDATA%`), and the
//! system, not a secret, tells who is at the other end.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::{Connection, Listener, Stream, connect, endpoint, nothing_listens};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::{Connection, Listener, Stream, connect, endpoint, nothing_listens};

/// The SID Windows gives the AppContainer of a package family (`S-1-15-2-…`): seven
/// little-endian words of the SHA-256 of its name in lower case, in UTF-16. Computed here
/// rather than asked of `userenv.dll`, which not every Windows-compatible system has.
pub fn app_container_sid(name: &str) -> String {
    use sha2::{Digest, Sha256};
    let utf16: Vec<u8> = name
        .to_lowercase()
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let digest = Sha256::digest(&utf16);
    let words: Vec<String> = digest[..28]
        .chunks_exact(4)
        .map(|word| u32::from_le_bytes(word.try_into().expect("four bytes")).to_string())
        .collect();
    format!("S-1-15-2-{}", words.join("-"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_app_containers_sid_is_derived_from_its_name() {
        // Microsoft Edge's package, whose AppContainer SID Windows shows.
        assert_eq!(
            super::app_container_sid("Microsoft.MicrosoftEdge_8wekyb3d8bbwe"),
            "S-1-15-2-3624051433-2125758914-1423191267-1740899205-1073925389-3782572162-737981194"
        );
    }
}
