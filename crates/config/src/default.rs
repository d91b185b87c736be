//! The config Switchboard writes on its first start: one demo server, `/mcp`'s token required,
//! and every other option shown commented out with its default.

use std::io::{self, Write as _};
use std::path::Path;

use super::{
    Config, ConfigError, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_HEALTH_INTERVAL,
    DEFAULT_HEALTH_TIMEOUT, DEFAULT_LISTEN, DEFAULT_MAX_BODY_SIZE, DEFAULT_MAX_MESSAGE_SIZE,
    DEFAULT_NAME_BUDGET, DEFAULT_REQUEST_TIMEOUT, DEFAULT_STOP_GRACE, MAX_SERVER_NAME_LEN,
    RestartPolicy, load, values,
};

/// Loads the config at `path`, first writing the default one there if there is no file yet; its
/// demo server runs `switchboard_exe demo-server`.
pub fn load_or_create_default(path: &Path, switchboard_exe: &Path) -> Result<Config, ConfigError> {
    if !path.exists() {
        write_default_config(path, switchboard_exe).map_err(|source| ConfigError::Write {
            path: path.to_path_buf(),
            source,
        })?;
    }
    load(path)
}

/// The config written on first start: one `demo` backend running `<switchboard_exe>
/// demo-server`, every other option shown commented out with its default.
pub fn default_config_text(switchboard_exe: &Path) -> String {
    let command = toml::Value::String(switchboard_exe.to_string_lossy().into_owned());
    let restart = RestartPolicy::default();
    let duration = values::format_duration;
    format!(
        r#"# Switchboard configuration.
#
# Each [servers.NAME] table is one local MCP server that Switchboard starts, keeps alive and
# offers to every connected editor. NAME may use letters, digits, `_` and `-` (at most {max_name}).
#
# Edits apply live: when this file is saved, Switchboard starts added servers, stops removed
# ones and restarts only the ones that changed. A saved file with a mistake changes nothing:
# what runs keeps running until the next valid save. (When Switchboard starts, a mistake
# inside one server leaves out just that server.) Switchboard shows each mistake with its line
# and column.
#
# Durations are written like "250ms", "30s", "5m" or "1h"; sizes like "64MiB".
# Every commented-out option below shows its default.

# The endpoint editors connect to (MCP over Streamable HTTP, at /mcp).
[endpoint]
# Every request to /mcp must carry `Authorization: Bearer TOKEN`, so that no other program on
# this machine can use your servers. The token is one Switchboard made (the file mcp-token in
# its data folder); `switchboard install` and `move`, and the dashboard, write it into your
# editors' configs. `switchboard connect` needs none: its socket admits only you.
require_token = true
# token = "${{env:SWITCHBOARD_MCP_TOKEN}}"   # your own token instead; ${{env:NAME}} as in `env`
# listen = "{listen}"     # other than 127.0.0.1 or ::1, it lets other machines connect
# max_body_size = "{max_body_size}"       # largest request an editor may send

# The desktop app.
# [desktop]
# notify_crash_loop = true      # a desktop notification when a server keeps crashing

[servers.demo]
# A small server built into Switchboard, to try things out. Replace it with your own.
command = {command}
args = ["demo-server"]
# Added to the environment Switchboard passes on. ${{env:NAME}} is taken from Switchboard's own
# environment (an unknown NAME is an error); write $${{ for a literal ${{.
# env = {{ API_KEY = "${{env:MY_API_KEY}}" }}
# cwd = "~/projects"            # working directory; `~` is your home, and it must exist
# enabled = true
# start_on_demand = true        # a call to this server while it is stopped starts it
# prefix = "demo"               # its tools and prompts are offered as demo__NAME
# Which tools editors see, by the server's own tool names; in patterns `*` stands for any run
# of characters and `?` for one character.
# tools_allow = []              # offer only tools that match one, like ["read_*"]; [] offers all
# tools_deny = []               # never offer tools that match one, like ["delete_*"]
# request_timeout = "{request_timeout}"
# handshake_timeout = "{handshake_timeout}"   # deadline of the answer to initialize
# protocol = "auto"             # or "session" (initialize only) or "stateless" (2026-07-28 only)
# health_interval = "{health_interval}"       # "off" disables health pings
# health_timeout = "{health_timeout}"
# max_message_size = "{max_message_size}"  # longest single message the server may send
# stop_grace = "{stop_grace}"             # wait after closing stdin, and again after SIGTERM

# What to do when the server exits on its own: restart it after a delay that doubles each
# time, and give up (crash loop) after too many restarts within one window.
# [servers.demo.restart]
# backoff_base = "{backoff_base}"
# backoff_cap = "{backoff_cap}"
# max_restarts = {max_restarts}
# window = "{window}"
# stable_after = "{stable_after}"          # uptime after which the restart budget starts over

# A profile is a view of the servers' tools for some editors, served at /mcp/NAME and by
# `switchboard connect --profile NAME`; /mcp serves the profile "default", which offers
# everything unless you describe it. Every server keeps running once, whatever the profiles.
# [profiles.reading]
# servers = ["demo"]            # the servers it offers; all when left out
# tools = ["demo__*"]           # tools to offer, by exposed name or the server's own name
# exclude_tools = ["*delete*"]  # tools never to offer
# tier = "read-only"            # or "non-destructive" or "all", by the tools' annotations
# max_name_length = {name_budget}          # longest tool name; {name_budget} fits Claude Code
"#,
        max_name = MAX_SERVER_NAME_LEN,
        name_budget = DEFAULT_NAME_BUDGET,
        listen = DEFAULT_LISTEN,
        max_body_size = values::format_size(DEFAULT_MAX_BODY_SIZE),
        request_timeout = duration(DEFAULT_REQUEST_TIMEOUT),
        handshake_timeout = duration(DEFAULT_HANDSHAKE_TIMEOUT),
        health_interval = duration(DEFAULT_HEALTH_INTERVAL),
        health_timeout = duration(DEFAULT_HEALTH_TIMEOUT),
        max_message_size = values::format_size(DEFAULT_MAX_MESSAGE_SIZE),
        stop_grace = duration(DEFAULT_STOP_GRACE),
        backoff_base = duration(restart.backoff_base),
        backoff_cap = duration(restart.backoff_cap),
        max_restarts = restart.max_restarts,
        window = duration(restart.window),
        stable_after = duration(restart.stable_after),
    )
}

fn write_default_config(path: &Path, exe: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    // `create_new` so that a file created meanwhile (another instance, the user) is never
    // overwritten.
    // Owner-only: people put tokens and API keys in it.
    let mut file = match platform::files::create_new_private_file(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
        Err(error) => return Err(error),
    };
    file.write_all(default_config_text(exe).as_bytes())?;
    tracing::info!(path = %path.display(), "wrote the default config file");
    Ok(())
}
