package wire

import "math"

// Message metadata keys with which Switchboard gateways carry a message's
// chain of causes (its id and hop count), so that a ring of agents spanning
// gateways is stopped by the same loop guard as one inside a gateway. Other
// peers ignore them.
const (
	MetaChainID   = "switchboard.chainId"
	MetaChainHops = "switchboard.chainHops"
)

// maxChainID bounds the chain id a peer may send.
const maxChainID = 128

// ChainMetadata returns the metadata carrying chain id and hops.
func ChainMetadata(id string, hops int) map[string]any {
	return map[string]any{MetaChainID: id, MetaChainHops: hops}
}

// ChainOf reads the chain from message metadata; ok is false when there is
// none or it is malformed (a non-string or over-long id, hops not a
// non-negative integer).
func ChainOf(meta map[string]any) (id string, hops int, ok bool) {
	id, _ = meta[MetaChainID].(string)
	if id == "" || len(id) > maxChainID {
		return "", 0, false
	}
	switch h := meta[MetaChainHops].(type) {
	case float64: // JSON numbers
		if h < 0 || h > math.MaxInt32 || h != math.Trunc(h) {
			return "", 0, false
		}
		hops = int(h)
	case int:
		if h < 0 {
			return "", 0, false
		}
		hops = h
	default:
		return "", 0, false
	}
	return id, hops, true
}
