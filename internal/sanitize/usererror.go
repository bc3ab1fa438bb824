package sanitize

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// User-facing text (the reference's sanitizeUserFacingText): <final> tags
// are removed everywhere; for an assistant message that failed, raw provider
// errors are rewritten by the table documented on AssistantText (a port of
// the reference's rules, case-insensitive, first match wins); all text
// loses its leading blank lines and consecutive duplicate paragraphs.

// Rewritten error messages, as the reference words them.
const (
	msgOrderingConflict = "Message ordering conflict - please try again. If this persists, use /new to start a fresh session."
	msgContextOverflow  = "Context overflow: prompt too large for the model. Try /reset (or /new) to start a fresh session, or use a larger-context model."
	msgBilling          = "⚠️ API provider returned a billing error — your API key has run out of credits or has an insufficient balance. Check your provider's billing dashboard and top up or switch to a different API key."
	msgRateLimit        = "⚠️ API rate limit reached. Please try again later."
	msgOverloaded       = "The AI service is temporarily overloaded. Please try again in a moment."
	msgTimedOut         = "LLM request timed out."
	msgUnknownError     = "LLM request failed with an unknown error."

	msgConnRefused = "LLM request failed: connection refused by the provider endpoint."
	msgConnReset   = "LLM request failed: network connection was interrupted."
	msgDNS         = "LLM request failed: DNS lookup for the provider endpoint failed."
	msgUnreachable = "LLM request failed: the provider endpoint is unreachable from this host."
	msgNetwork     = "LLM request failed: network connection error."
)

var (
	// /<\s*\/?\s*final\s*>/gi
	finalTagPlain      = &lazyRE{src: func() string { return `<` + jsSpace + `*/?` + jsSpace + `*` + ci("final") + jsSpace + `*>` }}
	leadingBlankLines  = &lazyRE{expr: `^(?:[ \t]*\r?\n)+`}
	paragraphBreak     = &lazyRE{expr: `\n{2,}`}
	jsSpaceRun         = &lazyRE{src: func() string { return jsSpace + `+` }}
	roleOrderingError  = &lazyRE{expr: `(?i)incorrect role information|roles must alternate`}
	errorPrefix        = &lazyRE{expr: `(?i)^(?:error|(?:[a-z][\w-]*\s+)?api\s*error|openai\s*error|anthropic\s*error|gateway\s*error|request failed|failed|exception)(?:\s+\d{3})?[:\s-]+`}
	contextOverflowHd  = &lazyRE{expr: `(?i)^(?:context overflow:|request_too_large\b|request size exceeds\b|request exceeds the maximum size\b|context length exceeded\b|maximum context length\b|prompt is too long\b|exceeds model context window\b)`}
	errorPayloadPrefix = &lazyRE{expr: `(?i)^(?:error|(?:[a-z][\w-]*\s+)?api\s*error|apierror|openai\s*error|anthropic\s*error|gateway\s*error)(?:\s+\d{3})?[:\s-]+`}
	httpStatusCode     = &lazyRE{expr: `(?i)^(?:http\s*)?(\d{3})(?:(?:\s*:\s*|\s+)((?s:.)+))?$`}
	httpStatusLine     = &lazyRE{expr: `(?i)^(?:http\s*)?(\d{3})(?:\s*:\s*|\s+)([^\n\r\x{2028}\x{2029}]+)$`}
	httpCodePrefix     = &lazyRE{expr: `(?s)^(\d{3})\s+(.+)$`}
	htmlPrefix         = &lazyRE{expr: `(?i)^\s*(?:<!doctype\s+html\b|<html\b)`}
	htmlClose          = &lazyRE{expr: `(?i)</html>`}
)

var httpErrorHints = []string{
	"error", "bad request", "not found", "unauthorized", "forbidden", "internal server",
	"service unavailable", "gateway", "rate limit", "overloaded", "timeout", "timed out",
	"invalid", "too many requests", "permission",
}

// sanitizeUserFacingText is the final step of reply extraction.
func sanitizeUserFacingText(text string, errorContext bool) string {
	if text == "" {
		return text
	}
	stripped := finalTagPlain.get().ReplaceAllLiteralString(text, "")
	trimmed := jsTrim(stripped)
	if trimmed == "" {
		return ""
	}
	if errorContext {
		if msg, ok := rewriteError(trimmed); ok {
			return msg
		}
	}
	return collapseDuplicateBlocks(leadingBlankLines.get().ReplaceAllLiteralString(stripped, ""))
}

// rewriteError applies the error rewriting table to trimmed error text.
func rewriteError(t string) (string, bool) {
	switch {
	case roleOrderingError.get().MatchString(t):
		return msgOrderingConflict, true
	case isContextOverflowError(t) && (isRawAPIErrorPayload(t) || isLikelyHTTPErrorText(t) ||
		errorPrefix.get().MatchString(t) || contextOverflowHd.get().MatchString(t)):
		return msgContextOverflow, true
	case isBillingError(t):
		return msgBilling, true
	case isRawAPIErrorPayload(t) || isLikelyHTTPErrorText(t):
		return formatRawError(t), true
	case errorPrefix.get().MatchString(t):
		if msg := rateLimitOrOverloadedCopy(t); msg != "" {
			return msg, true
		}
		if msg := transportCopy(t); msg != "" {
			return msg, true
		}
		if isTimeoutError(t) {
			return msgTimedOut, true
		}
		return formatRawError(t), true
	}
	return "", false
}

// collapseDuplicateBlocks drops a paragraph that repeats the one before it
// (compared with whitespace runs collapsed). Text without duplicates is
// returned as it is.
func collapseDuplicateBlocks(text string) string {
	trimmed := jsTrim(text)
	if trimmed == "" {
		return text
	}
	blocks := paragraphBreak.get().Split(trimmed, -1)
	if len(blocks) < 2 {
		return text
	}
	result := make([]string, 0, len(blocks))
	last := ""
	for _, b := range blocks {
		norm := jsSpaceRun.get().ReplaceAllLiteralString(jsTrim(b), " ")
		if last != "" && norm == last {
			continue
		}
		result = append(result, jsTrim(b))
		last = norm
	}
	if len(result) == len(blocks) {
		return text
	}
	return strings.Join(result, "\n\n")
}

// httpStatus is a leading HTTP status of an error text.
type httpStatus struct {
	code int
	rest string
}

func leadingHTTPStatus(raw string) (httpStatus, bool) {
	m := httpStatusCode.get().FindStringSubmatch(raw)
	if m == nil {
		return httpStatus{}, false
	}
	code, _ := strconv.Atoi(m[1])
	if code < 100 || code > 599 {
		return httpStatus{}, false
	}
	return httpStatus{code: code, rest: jsTrim(m[2])}, true
}

// isCloudflareOrHTMLErrorPage: a 5xx status with a Cloudflare code or an
// HTML page body.
func isCloudflareOrHTMLErrorPage(raw string) bool {
	st, ok := leadingHTTPStatus(jsTrim(raw))
	if !ok || st.code < 500 {
		return false
	}
	switch st.code {
	case 521, 522, 523, 524, 525, 526, 530:
		return true
	}
	return htmlPrefix.get().MatchString(st.rest) && htmlClose.get().MatchString(st.rest)
}

func isLikelyHTTPErrorText(raw string) bool {
	if isCloudflareOrHTMLErrorPage(raw) {
		return true
	}
	st, ok := leadingHTTPStatus(raw)
	if !ok || st.code < 400 {
		return false
	}
	return containsAny(strings.ToLower(st.rest), httpErrorHints)
}

// parseAPIErrorPayload parses a JSON error payload, possibly behind an
// "Error:"-like prefix.
func parseAPIErrorPayload(raw string) map[string]any {
	t := jsTrim(raw)
	if t == "" {
		return nil
	}
	candidates := []string{t}
	if loc := errorPayloadPrefix.get().FindStringIndex(t); loc != nil {
		candidates = append(candidates, jsTrim(t[loc[1]:]))
	}
	for _, c := range candidates {
		if !strings.HasPrefix(c, "{") || !strings.HasSuffix(c, "}") {
			continue
		}
		var v any
		if json.Unmarshal([]byte(c), &v) != nil {
			continue
		}
		if obj, ok := v.(map[string]any); ok && isErrorPayload(obj) {
			return obj
		}
	}
	return nil
}

func isErrorPayload(p map[string]any) bool {
	if p["type"] == "error" {
		return true
	}
	if _, ok := p["request_id"].(string); ok {
		return true
	}
	if _, ok := p["requestId"].(string); ok {
		return true
	}
	switch e := p["error"].(type) {
	case map[string]any:
		for _, k := range [...]string{"message", "type", "code"} {
			if _, ok := e[k].(string); ok {
				return true
			}
		}
	case string:
		_, ok := p["message"].(string)
		return ok
	}
	return false
}

func isRawAPIErrorPayload(raw string) bool { return parseAPIErrorPayload(raw) != nil }

// formatRawError formats an error text for users.
func formatRawError(raw string) string {
	t := jsTrim(raw)
	if t == "" {
		return msgUnknownError
	}
	if st, ok := leadingHTTPStatus(t); ok && isCloudflareOrHTMLErrorPage(t) {
		return fmt.Sprintf("The AI service is temporarily unavailable (HTTP %d). Please try again in a moment.", st.code)
	}
	if m := httpStatusLine.get().FindStringSubmatch(t); m != nil {
		if rest := jsTrim(m[2]); !strings.HasPrefix(rest, "{") {
			return "HTTP " + m[1] + ": " + rest
		}
	}
	httpCode, candidate := "", t
	if m := httpCodePrefix.get().FindStringSubmatch(candidate); m != nil {
		httpCode, candidate = m[1], jsTrim(m[2])
	}
	if p := parseAPIErrorPayload(candidate); p != nil {
		var typ, msg string
		if e, ok := p["error"].(map[string]any); ok {
			typ, _ = e["type"].(string)
			if typ == "" {
				typ, _ = e["code"].(string)
			}
			msg, _ = e["message"].(string)
		} else if e, ok := p["error"].(string); ok {
			typ = e
		}
		if typ == "" {
			typ, _ = p["type"].(string)
		}
		if msg == "" {
			msg, _ = p["message"].(string)
		}
		if msg != "" {
			prefix := "LLM error"
			if httpCode != "" {
				prefix = "HTTP " + httpCode
			}
			if typ != "" {
				prefix += " " + typ
			}
			return prefix + ": " + msg
		}
	}
	if utf16Len(t) > 600 {
		return utf16Prefix(t, 600) + "…"
	}
	return t
}

// errorPattern is a lowercase substring or a regexp tested on lowercased
// text.
type errorPattern struct {
	sub string
	re  *lazyRE
}

func matchesAny(raw string, pats []errorPattern) bool {
	if raw == "" {
		return false
	}
	lower := strings.ToLower(raw)
	for _, p := range pats {
		if p.re != nil && p.re.get().MatchString(lower) || p.re == nil && strings.Contains(lower, p.sub) {
			return true
		}
	}
	return false
}

var (
	rateLimitPatterns = []errorPattern{
		{re: &lazyRE{expr: `rate[_ ]limit|too many requests|429`}}, {sub: "model_cooldown"}, {sub: "exceeded your current quota"},
		{sub: "resource has been exhausted"}, {sub: "quota exceeded"}, {sub: "resource_exhausted"}, {sub: "usage limit"},
		{re: &lazyRE{expr: `\btpm\b`}}, {sub: "tokens per minute"}, {sub: "tokens per day"},
	}
	overloadedPatterns = []errorPattern{
		{re: &lazyRE{expr: `overloaded_error|"type"\s*:\s*"overloaded_error"`}}, {sub: "overloaded"},
		{re: &lazyRE{expr: `service[_ ]unavailable.*(?:overload|capacity|high[_ ]demand)|(?:overload|capacity|high[_ ]demand).*service[_ ]unavailable`}},
		{sub: "high demand"},
	}
	timeoutPatterns = []errorPattern{
		{sub: "timeout"}, {sub: "timed out"}, {sub: "service unavailable"}, {sub: "deadline exceeded"}, {sub: "connection error"},
		{sub: "network error"}, {sub: "network request failed"}, {sub: "fetch failed"}, {sub: "socket hang up"},
		{re: &lazyRE{expr: `\beconn(?:refused|reset|aborted)\b`}}, {re: &lazyRE{expr: `\benetunreach\b`}}, {re: &lazyRE{expr: `\behostunreach\b`}}, {re: &lazyRE{expr: `\behostdown\b`}},
		{re: &lazyRE{expr: `\benetreset\b`}}, {re: &lazyRE{expr: `\betimedout\b`}}, {re: &lazyRE{expr: `\besockettimedout\b`}}, {re: &lazyRE{expr: `\bepipe\b`}}, {re: &lazyRE{expr: `\benotfound\b`}},
		{re: &lazyRE{expr: `\beai_again\b`}}, {re: &lazyRE{expr: `without sending (?:any )?chunks?`}},
		{re: &lazyRE{expr: `\breason:\s*(?:abort|error|malformed_response|network_error)\b`}}, // also "stop reason:", "unhandled stop reason:"
		{re: &lazyRE{expr: `\bprovider returned error\b`}},
	}
	billingPatterns = []errorPattern{
		{re: &lazyRE{expr: `["']?(?:status|code)["']?\s*[:=]\s*402\b|\bhttp\s*402\b|\berror(?:\s+code)?\s*[:=]?\s*402\b|\b(?:got|returned|received)\s+(?:a\s+)?402\b|^\s*402\s+payment`}},
		{sub: "payment required"}, {sub: "insufficient credits"}, {re: &lazyRE{expr: `insufficient[_ ]quota`}}, {sub: "credit balance"},
		{sub: "plans & billing"}, {sub: "insufficient balance"}, {re: &lazyRE{expr: `requires?\s+more\s+credits`}},
	}
	billingHead    = &lazyRE{expr: `(?i)^(?:error[:\s-]+)?billing(?:\s+error)?(?:[:\s-]+|$)|^(?:error[:\s-]+)?(?:credit balance|insufficient credits?|payment required|http\s*402\b)`}
	billingHard402 = &lazyRE{expr: `["']?(?:status|code)["']?\s*[:=]\s*402\b|\bhttp\s*402\b|\berror(?:\s+code)?\s*[:=]?\s*402\b|^\s*402\s+payment`}
)

func isTimeoutError(raw string) bool { return matchesAny(raw, timeoutPatterns) }

func isBillingError(raw string) bool {
	lower := strings.ToLower(raw)
	if lower == "" {
		return false
	}
	if utf16Len(raw) > 512 {
		return billingHard402.get().MatchString(lower)
	}
	if matchesAny(raw, billingPatterns) {
		return true
	}
	if !billingHead.get().MatchString(raw) {
		return false
	}
	return containsAny(lower, []string{"upgrade", "credits", "payment", "plan"})
}

func rateLimitOrOverloadedCopy(raw string) string {
	switch {
	case matchesAny(raw, rateLimitPatterns):
		return msgRateLimit
	case matchesAny(raw, overloadedPatterns):
		return msgOverloaded
	}
	return ""
}

var (
	connRefused = &lazyRE{expr: `\beconnrefused\b`}
	connReset   = &lazyRE{expr: `\beconnreset\b|\beconnaborted\b|\benetreset\b|\bepipe\b`}
	dnsFailure  = &lazyRE{expr: `\benotfound\b|\beai_again\b`}
	unreachable = &lazyRE{expr: `\benetunreach\b|\behostunreach\b|\behostdown\b`}
)

func transportCopy(raw string) string {
	lower := strings.ToLower(raw)
	switch {
	case connRefused.get().MatchString(lower) || containsAny(lower, []string{"connection refused", "actively refused"}):
		return msgConnRefused
	case connReset.get().MatchString(lower) || containsAny(lower, []string{"socket hang up", "connection reset", "connection aborted"}):
		return msgConnReset
	case dnsFailure.get().MatchString(lower) || containsAny(lower, []string{"getaddrinfo", "no such host", "dns"}):
		return msgDNS
	case unreachable.get().MatchString(lower) || containsAny(lower, []string{"network is unreachable", "host is unreachable"}):
		return msgUnreachable
	case containsAny(lower, []string{"fetch failed", "connection error", "network request failed"}):
		return msgNetwork
	}
	return ""
}

// isContextOverflowError reports a context-window overflow error text.
func isContextOverflowError(raw string) bool {
	if raw == "" {
		return false
	}
	lower := strings.ToLower(raw)
	if tpmHint.get().MatchString(lower) || strings.Contains(lower, "tokens per minute") {
		return false // Groq's 413 for TPM is a rate limit
	}
	if strings.Contains(lower, "reasoning is mandatory") || strings.Contains(lower, "reasoning is required") ||
		strings.Contains(lower, "requires reasoning") ||
		strings.Contains(lower, "reasoning") && strings.Contains(lower, "cannot be disabled") {
		return false
	}
	has := func(subs ...string) bool {
		for _, sub := range subs {
			if !strings.Contains(lower, sub) {
				return false
			}
		}
		return true
	}
	hasContextWindow := containsAny(lower, []string{"context window", "context length", "maximum context length"})
	return containsAny(lower, []string{
		"request_too_large", "request exceeds the maximum size", "context length exceeded",
		"maximum context length", "prompt is too long", "prompt too long", "exceeds model context window",
		"model token limit", "context overflow:", "exceed context limit",
		"exceeds the model's maximum context", "context_window_exceeded",
	}) ||
		has("request size exceeds") && hasContextWindow ||
		has("max_tokens", "exceed", "context") ||
		has("input length", "exceed", "context") ||
		has("413", "too large") ||
		containsAny(raw, []string{"上下文过长", "上下文超出", "上下文长度超", "超出最大上下文", "请压缩上下文"})
}

var tpmHint = &lazyRE{expr: `\btpm\b`}
