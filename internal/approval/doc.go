// Package approval owns exec approvals: the pure decision whether a shell
// command may run, must be asked about, or is refused (tools.exec.security,
// ask, askFallback, safeBins and the allow-always allowlist); the Broker
// that holds pending approvals with ids, expiry and decision channels; the
// durable files (pending approvals and the allowlist) in the state
// directory; and Gate, the exec tool decorator that asks before a command
// runs and returns a denial the model reads as the tool's result.
//
// The gateway reaches the Broker through its own small interface and the
// daemon wires them; this package imports only the tools contract. The
// daemon and the gateway may import it.
package approval
