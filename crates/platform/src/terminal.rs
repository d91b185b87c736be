//! Reading a secret typed at the terminal without showing it: echo off through termios on
//! Unix, through the console's input mode on Windows; the one place that changes how the
//! terminal echoes.

use std::io::{self, BufRead as _, IsTerminal as _, Write as _};

/// A secret from standard input: at a terminal, one line typed after `prompt` (on stderr) with
/// echo off; otherwise everything piped in. The line end is not part of it.
pub fn read_secret(prompt: &str) -> io::Result<String> {
    let stdin = io::stdin();
    let mut value = String::new();
    if !stdin.is_terminal() {
        io::Read::read_to_string(&mut stdin.lock(), &mut value)?;
        return Ok(value.trim_end_matches(['\n', '\r']).to_owned());
    }
    eprint!("{prompt}");
    io::stderr().flush()?;
    let echo = EchoOff::new()?;
    let read = stdin.lock().read_line(&mut value);
    drop(echo);
    eprintln!();
    read?;
    Ok(value.trim_end_matches(['\n', '\r']).to_owned())
}

/// Turns the terminal's echo off until dropped.
#[cfg(unix)]
struct EchoOff {
    saved: libc::termios,
}

#[cfg(unix)]
impl EchoOff {
    fn new() -> io::Result<EchoOff> {
        // SAFETY: tcgetattr fills the termios it is given; zeroed is a valid starting value.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: fd 0 is open (it is a terminal) and `saved` is a valid termios.
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut saved) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut quiet = saved;
        quiet.c_lflag &= !libc::ECHO;
        // SAFETY: as above, with a termios derived from the terminal's own.
        if unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &quiet) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(EchoOff { saved })
    }
}

#[cfg(unix)]
impl Drop for EchoOff {
    fn drop(&mut self) {
        // SAFETY: restores the settings read in `new` on the same descriptor.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved) };
    }
}

/// Turns the console's echo off until dropped.
#[cfg(windows)]
struct EchoOff {
    input: windows_sys::Win32::Foundation::HANDLE,
    saved: u32,
}

#[cfg(windows)]
impl EchoOff {
    fn new() -> io::Result<EchoOff> {
        use windows_sys::Win32::System::Console::{
            ENABLE_ECHO_INPUT, GetConsoleMode, GetStdHandle, STD_INPUT_HANDLE, SetConsoleMode,
        };
        // SAFETY: returns this process's standard input handle, or an invalid one.
        let input = unsafe { GetStdHandle(STD_INPUT_HANDLE) };
        let mut saved = 0;
        // SAFETY: `saved` is a valid place for the mode.
        if unsafe { GetConsoleMode(input, &mut saved) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the same console handle, with a mode derived from its own.
        if unsafe { SetConsoleMode(input, saved & !ENABLE_ECHO_INPUT) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(EchoOff { input, saved })
    }
}

#[cfg(windows)]
impl Drop for EchoOff {
    fn drop(&mut self) {
        // SAFETY: restores the mode read in `new` on the same handle.
        unsafe { windows_sys::Win32::System::Console::SetConsoleMode(self.input, self.saved) };
    }
}
