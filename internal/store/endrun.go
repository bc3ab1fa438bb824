package store

import "context"

// RunEnder is a Store that can append a run's last messages in the
// transaction that finishes the run, so a turn's end is one commit.
type RunEnder interface {
	// EndRun appends msgs to transcript sessionID as AppendMessages does
	// and finishes runID as FinishRun does, in one transaction: on any
	// error nothing is written. It returns the run and the stored
	// messages.
	EndRun(ctx context.Context, runID string, res RunResult, sessionID string, msgs []Message) (*Run, []Message, error)
}

// RunFinisher is the part of a Store EndRun uses.
type RunFinisher interface {
	AppendMessages(ctx context.Context, sessionID string, msgs []Message) ([]Message, error)
	FinishRun(ctx context.Context, runID string, res RunResult) (*Run, error)
}

// EndRun appends msgs to transcript sessionID and finishes runID: in one
// transaction when st is a RunEnder, else with AppendMessages, then
// FinishRun. The stored messages are returned whenever they were stored,
// also when the finish failed after them, so a caller that retries passes
// none the second time.
func EndRun(ctx context.Context, st RunFinisher, runID string, res RunResult, sessionID string, msgs []Message) (*Run, []Message, error) {
	if e, ok := st.(RunEnder); ok {
		return e.EndRun(ctx, runID, res, sessionID, msgs)
	}
	var stored []Message
	if len(msgs) > 0 {
		var err error
		if stored, err = st.AppendMessages(ctx, sessionID, msgs); err != nil {
			return nil, nil, err
		}
	}
	run, err := st.FinishRun(ctx, runID, res)
	return run, stored, err
}
