// Package shell owns the exec tool: it runs a model-supplied command with
// /bin/sh -c in the caller's workspace (or a workdir the call names), in
// its own process group, bounded by a timeout that kills the whole group,
// and returns stdout and stderr interleaved, capped with head and tail kept,
// followed by the reference's exit text ("(Command exited with code N)",
// "Command timed out after N seconds.").
//
// A sandbox confines the command either by wrapping it (Confiner, the
// bubblewrap backend) or by running it itself (Runner, the Docker
// backend); the output cap, the timeout and background sessions stay here.
//
// exec is a mutating shell surface: it is not confined to the workspace.
// Which runs get it is the daemon's decision (tools.profile, allow/deny).
// It depends only on the tools package.
package shell
