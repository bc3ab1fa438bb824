package agent

import (
	"context"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// ContextReport is what a session's next turn would send, against the
// model's window (/context).
type ContextReport struct {
	Model         string   `json:"model"`
	Window        int      `json:"window"`
	Threshold     int      `json:"compactAt"`
	SystemChars   int      `json:"systemPromptChars"`
	SystemTokens  int      `json:"systemPromptTokens"`
	Tools         []string `json:"tools"`
	ToolChars     int      `json:"toolSchemaChars"`
	ToolTokens    int      `json:"toolSchemaTokens"`
	SummaryChars  int      `json:"summaryChars"`
	SummaryTokens int      `json:"summaryTokens"`
	Messages      int      `json:"messages"`
	HistoryChars  int      `json:"historyChars"`
	HistoryTokens int      `json:"historyTokens"`
	Total         int      `json:"totalTokens"`
	// Calibration is the model's ratio of reported to estimated tokens.
	Calibration float64 `json:"calibration"`
}

// ContextReport estimates the context of the session's next turn.
func (r *Runner) ContextReport(ctx context.Context, sessionKey string) (*ContextReport, error) {
	sess, model, err := r.sessionModel(ctx, sessionKey)
	if err != nil {
		return nil, err
	}
	info := RunInfo{SessionKey: sess.Key, AgentID: sess.AgentID, Session: sess, Input: &Input{SessionKey: sess.Key, AgentID: sess.AgentID}}
	req := &provider.Request{Model: model.ModelID}
	if r.cfg.SystemPrompt != nil {
		req.System = r.cfg.SystemPrompt(ctx, info)
	}
	rep := &ContextReport{Model: modelKey(model), Window: modelWindow(model).Tokens, Calibration: r.calib.Ratio(modelKey(model))}
	rep.Threshold = compaction.Threshold(rep.Window, r.cfg.Compaction.ReserveTokens)
	if r.cfg.Tools != nil {
		for _, t := range r.cfg.Tools(ctx, info).All() {
			rep.Tools = append(rep.Tools, t.Name())
			req.Tools = append(req.Tools, provider.ToolDef{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()})
			rep.ToolChars += len(t.Name()) + len(t.Description()) + len(t.Schema())
		}
	}
	v, err := r.view(ctx, sess.SessionID)
	if err != nil {
		return nil, err
	}
	key, cnt := modelKey(model), r.counter(model)
	rep.SystemChars, rep.SystemTokens = len(req.System), r.calib.Scale(key, cnt.String(req.System))
	rep.ToolTokens = r.calib.Scale(key, cnt.Request(&provider.Request{Tools: req.Tools}))
	msgs := v.messages()
	start := 0
	if v.summary != "" {
		start = 1
		rep.SummaryChars, rep.SummaryTokens = len(msgs[0].Text), r.calib.Scale(key, cnt.Message(&msgs[0]))
	}
	hist := 0
	for i := start; i < len(msgs); i++ {
		rep.HistoryChars += len(msgs[i].Text)
		hist += cnt.Message(&msgs[i])
	}
	rep.Messages, rep.HistoryTokens = len(msgs)-start, r.calib.Scale(key, hist)
	req.Messages = msgs
	rep.Total = r.calib.Scale(key, cnt.Request(req))
	return rep, nil
}
