package compaction

// Item describes one transcript entry to the cut-point rules.
type Item struct {
	// Kind is "user", "assistant", "toolResult" or "" for entries that
	// are not messages (they are never cut at and weigh nothing).
	Kind   string
	Tokens int
	// CallIDs are the tool calls of an assistant message.
	CallIDs []string
	// ResultFor is the call id a tool result answers.
	ResultFor string
}

// Item kinds.
const (
	KindUser       = "user"
	KindAssistant  = "assistant"
	KindToolResult = "toolResult"
)

// Cut chooses where history splits into the part summarised (items[:i])
// and the tail kept verbatim (items[i:]). Walking back from the end, it
// keeps about keepRecent tokens, cutting only before a user or assistant
// message, never between a tool call and its result. maxTail, when > 0,
// bounds the tail: the cut moves later until the tail fits. It returns
// len(items) when no tail fits and 0 when there is nothing to summarise
// before the cut.
func Cut(items []Item, keepRecent, maxTail int) int {
	n := len(items)
	// callAt maps a tool call id to the index of its assistant message.
	callAt := make(map[string]int)
	for i, it := range items {
		for _, id := range it.CallIDs {
			callAt[id] = i
		}
	}
	// allowed[i]: cutting before i separates no call from its result.
	allowed := make([]bool, n+1)
	// earliestCall[i] is the smallest call index whose result lies at or
	// after i; a cut at i is valid when no result at >= i belongs to a call
	// before i.
	earliest := n
	for i := n - 1; i >= 0; i-- {
		it := items[i]
		if it.Kind == KindToolResult {
			if c, ok := callAt[it.ResultFor]; ok {
				earliest = min(earliest, c)
			}
		}
		cuttable := it.Kind == KindUser || it.Kind == KindAssistant
		allowed[i] = cuttable && earliest >= i
	}
	suffix := make([]int, n+1)
	for i := n - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + items[i].Tokens
	}
	cut := n
	for i := n - 1; i >= 0; i-- {
		if allowed[i] {
			cut = i
		}
		if suffix[i] >= keepRecent && cut < n {
			break
		}
	}
	if maxTail > 0 {
		for cut < n && suffix[cut] > maxTail {
			next := n
			for j := cut + 1; j < n; j++ {
				if allowed[j] {
					next = j
					break
				}
			}
			cut = next
		}
	}
	return cut
}

// PreserveTurns moves a cut earlier so that the last turns user turns (a
// user message and everything after it) stay verbatim, as
// recentTurnsPreserve asks (all of them, when there are fewer). The tail may not grow past maxTail tokens (> 0):
// fitting the window wins over preserving turns. It returns cut unchanged
// when turns <= 0 or the cut already keeps them.
func PreserveTurns(items []Item, cut, turns, maxTail int) int {
	if turns <= 0 || cut <= 0 {
		return cut
	}
	seen := 0
	tail := 0
	for i := len(items) - 1; i >= 0; i-- {
		tail += items[i].Tokens
		if i < cut && maxTail > 0 && tail > maxTail {
			return cut
		}
		if items[i].Kind != KindUser {
			continue
		}
		if seen++; seen == turns {
			return min(cut, i)
		}
	}
	return 0 // fewer turns than asked: all of them stay
}
