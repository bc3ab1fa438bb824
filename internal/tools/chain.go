package tools

import "fmt"

// Chain is the chain of causes a run belongs to: a person's message starts
// one (its ID is that run's id, Hops 0), and every agent-to-agent message
// or spawn it leads to is one hop further. Path lists the sessions the
// chain has reached, oldest first, so that a message going round a ring of
// agents is recognised however many agents the ring has.
type Chain struct {
	ID   string   `json:"id"`
	Hops int      `json:"hops"`
	Path []string `json:"path,omitempty"`
	// Span is the trace span (hex id) the chain's next step continues
	// under: the tool call that sent the message or spawned the run.
	Span string `json:"span,omitempty"`
	// Untrusted names the least-trusted origin the chain passed through
	// when that is outside the operator ("webhook", "a2a", "<channel>
	// room"; "" when the operator or its own agents started it). It is set
	// once, where outside input enters, and every step the chain takes
	// keeps it: a spawned child, a sent message, a reply-back or announce
	// step, a completion posted back are all as untrusted as their cause.
	// Only the operator's grant (tools.untrusted.allow) lifts what it
	// withholds.
	Untrusted string `json:"untrusted,omitempty"`
}

// Chain limits: a chain may grow to MaxHops hops and reach one session at
// most MaxVisits times.
type ChainLimits struct {
	MaxHops   int
	MaxVisits int
}

// maxPath bounds the path a chain carries (the hop limit bounds it in
// practice; this keeps a misconfigured huge limit from growing runs'
// stored input without end).
const maxPath = 256

// Next is the chain of a message this one sends to target.
func (c Chain) Next(target string) Chain {
	path := append(append([]string(nil), c.Path...), target)
	if len(path) > maxPath {
		path = path[len(path)-maxPath:]
	}
	return Chain{ID: c.ID, Hops: c.Hops + 1, Path: path, Span: c.Span, Untrusted: c.Untrusted}
}

// Taint returns c with origin folded into its Untrusted: the chain keeps
// the first outside origin it met ("" origin changes nothing).
func (c Chain) Taint(origin string) Chain {
	if c.Untrusted == "" {
		c.Untrusted = origin
	}
	return c
}

// CheckNext returns why a message from c to target must not be sent ("":
// it may): past the hop limit, or reaching target once too often. The text
// is for the model, which must stop forwarding.
func (c Chain) CheckNext(target string, lim ChainLimits) string {
	if lim.MaxHops > 0 && c.Hops+1 > lim.MaxHops {
		return fmt.Sprintf("Loop protection: this would be hop %d of agent chain %s, over the limit of %d "+
			"(tools.agentToAgent.maxChainHops). Do not forward or delegate it again; answer with what you have.",
			c.Hops+1, c.ID, lim.MaxHops)
	}
	if lim.MaxVisits > 0 {
		visits := 0
		for _, k := range c.Path {
			if k == target {
				visits++
			}
		}
		if visits >= lim.MaxVisits {
			return fmt.Sprintf("Loop protection: agent chain %s has already reached %s %d times, the limit "+
				"(tools.agentToAgent.maxChainVisits). The agents are going round in a loop: stop forwarding and answer with what you have.",
				c.ID, target, visits)
		}
	}
	return ""
}
