// Package wire owns the OpenClaw-compatible gateway protocol on the wire:
// frame envelopes (req, res, event, cancel), the error shape and its codes,
// the connect handshake types (connect params, connect.challenge, hello-ok),
// method and event names, operator scopes, the typed params and results of
// the methods Switchboard implements, and a strict decoder for all of it.
//
// The decoder follows the reference gateway's validation: frame envelopes
// and method params are closed objects, and a rejected params object is
// reported with the reference's message shapes, for example
//
//	invalid sessions.patch params: at root: unexpected property 'bogusField'
//	invalid chat.send params: must have required property 'idempotencyKey'
//
// (see ValidateParams). Those messages follow the AJV wording the reference
// produces; only the ones quoted in the spec were observed verbatim.
//
// wire is a leaf: it imports only the standard library, holds no state and
// does no I/O. The gateway server and Go clients (internal/client) import
// it; it must not import them back.
package wire
