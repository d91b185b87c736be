use clap::CommandFactory as _;

use super::Cli;

/// Every command, argument and flag, hidden ones too, has a line of help.
#[test]
fn every_command_argument_and_flag_says_what_it_is_for() {
    let mut command = Cli::command();
    command.build();
    let mut missing = Vec::new();
    without_help(&command, "switchboard", &mut missing);
    assert!(missing.is_empty(), "without a help line: {missing:#?}");
}

fn without_help(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
    for argument in command.get_arguments() {
        if argument.get_help().is_none() && argument.get_long_help().is_none() {
            missing.push(format!("{path}: {}", argument.get_id()));
        }
    }
    for subcommand in command.get_subcommands() {
        let path = format!("{path} {}", subcommand.get_name());
        if subcommand.get_about().is_none() && subcommand.get_long_about().is_none() {
            missing.push(path.clone());
        }
        without_help(subcommand, &path, missing);
    }
}
