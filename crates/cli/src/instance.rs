//! `switchboard status` and `switchboard stop`: the running instance, asked over its socket
//! (`control::client`), which only this user's processes holding the socket's key reach.

use std::process::ExitCode;
use std::time::Duration;

use control::client::{self, Stopped, Unreached};
use control::instance::Running;
use platform::runtime;

/// `status`'s exit status when no instance is running.
const NOT_RUNNING: u8 = 3;

/// How long `stop` waits for the instance to be gone: its own shutdown gives up after 15 s.
const STOP_LIMIT: Duration = Duration::from_secs(20);

/// The shape of `status --json`, shown by `switchboard status --help`.
pub(crate) const STATUS_JSON_HELP: &str = "\
With --json, stdout has one JSON document:
  {\"running\": true, \"pid\": 1234, \"dashboard\": \"http://127.0.0.1:8765/#key=…\",
   \"mcp\": \"http://127.0.0.1:8765/mcp\", \"config\": \"/path/config.toml\",
   \"backends\": [{\"name\": \"time\", \"state\": \"ready\", \"failing\": false, \"pid\": 1240,
                 \"last_error\": null}]}
or {\"running\": false} when none is (exit status 3). A state is one of stopped, starting,
ready, backoff, crash_loop, stopping, needs_sign_in.";

/// `status --json`'s document.
#[derive(serde::Serialize)]
struct StatusDocument {
    running: bool,
    #[serde(flatten)]
    instance: Option<Running>,
}

/// `switchboard status`: exits 0 with what runs, 3 when nothing does.
pub(crate) fn status(json: bool) -> anyhow::Result<ExitCode> {
    let asked = runtime::current_thread().block_on(client::status(
        &platform::dirs::runtime_dir(),
        &platform::dirs::data_dir(),
    ));
    let running = match asked {
        Ok(running) => running,
        Err(Unreached::NotRunning { .. }) => {
            if json {
                crate::output::json(&StatusDocument {
                    running: false,
                    instance: None,
                });
            }
            eprintln!("no Switchboard is running; start one with `switchboard serve`");
            return Ok(ExitCode::from(NOT_RUNNING));
        }
        Err(error) => return Err(error.into()),
    };
    if json {
        crate::output::json(&StatusDocument {
            running: true,
            instance: Some(running),
        });
        return Ok(ExitCode::SUCCESS);
    }
    crate::output::line(format_args!("running:   pid {}", running.pid));
    crate::output::line(format_args!("dashboard: {}", running.dashboard));
    crate::output::line(format_args!("mcp:       {}", running.mcp));
    crate::output::line(format_args!("config:    {}", running.config.display()));
    if running.backends.is_empty() {
        crate::output::line("backends:  none");
    } else {
        crate::output::line("backends:");
    }
    for backend in &running.backends {
        let pid = backend
            .pid
            .map(|pid| format!(" (pid {pid})"))
            .unwrap_or_default();
        let error = backend
            .last_error
            .as_deref()
            .map(|error| format!(": {error}"))
            .unwrap_or_default();
        crate::output::line(format_args!(
            "  {}: {}{pid}{error}",
            backend.name, backend.state
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// `switchboard stop`: exits 0 once the instance is gone, or when none was running.
pub(crate) fn stop() -> anyhow::Result<ExitCode> {
    let stopped = runtime::current_thread().block_on(client::stop(
        &platform::dirs::runtime_dir(),
        &platform::dirs::data_dir(),
        STOP_LIMIT,
    ));
    match stopped {
        Ok(Stopped::Gone { pid }) => {
            eprintln!("Switchboard (pid {pid}) stopped, and every server it ran with it");
            Ok(ExitCode::SUCCESS)
        }
        Ok(Stopped::StillRunning { pid, waited }) => {
            eprintln!(
                "Switchboard (pid {pid}) was asked to stop and still runs after {} s",
                waited.as_secs()
            );
            Ok(ExitCode::FAILURE)
        }
        Err(Unreached::NotRunning { .. }) => {
            eprintln!("no Switchboard was running; nothing to stop");
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => Err(error.into()),
    }
}
