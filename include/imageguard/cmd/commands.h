/* The subcommands main.c dispatches to. Each takes argv after the command name
 * (argv[0] is the command) and returns the process exit code of CONTRACT §3:
 * 0 success, 1 runtime failure, 2 usage or invalid input. One src/cmd_<name>.c each. */
#ifndef IMAGEGUARD_COMMANDS_H
#define IMAGEGUARD_COMMANDS_H

int cmd_version(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_check_config(int argc, char **argv);
int cmd_markers(int argc, char **argv);
int cmd_lint(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_reconcile(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_tags(int argc, char **argv);
int cmd_verify(int argc, char **argv);

#endif
