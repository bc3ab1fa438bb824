package compaction

import (
	"regexp"
	"strings"

	"github.com/switchboardhq/switchboard/internal/lazy"
)

// overflowPhrases are lower-case fragments of the context-overflow errors
// providers send (OpenAI, Anthropic, Bedrock, Gemini, Ollama, OpenRouter,
// vLLM, llama.cpp), as the reference recognises them.
var overflowPhrases = []string{
	"context_length_exceeded",
	"context length exceeded",
	"maximum context length",
	"request_too_large",
	"request size exceeds",
	"request exceeds the maximum size",
	"prompt is too long",
	"prompt too long",
	"input is too long for the model",
	"input is too long for requested model",
	"input exceeds the maximum number of tokens",
	"input token count exceeds the maximum number of input tokens",
	"exceeds model context window",
	"exceeds the context window",
	"context window exceeded",
	"exceeds the available context size",
	"context overflow",
	"too many tokens in the prompt",
	"reduce the length of the messages",
}

// overflowPatterns catch the worded variants ("... tokens > 200000
// maximum", "requested 130000 tokens ... context length is 128000").
// They are compiled on first use, not at process start.
func overflowPatterns() []*regexp.Regexp { return overflowPatternsValue.Get() }

// overflowPatternsValue is built on the first call of overflowPatterns.
var overflowPatternsValue = lazy.Value[[]*regexp.Regexp]{New: buildOverflowPatterns}

// buildOverflowPatterns builds overflowPatterns's value.
func buildOverflowPatterns() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`\b\d+\s*tokens?\s*>\s*\d+\s*maximum\b`),
		regexp.MustCompile(`maximum (?:context|input) (?:length|size) (?:is|of) \d+`),
		regexp.MustCompile(`ollama error:.*context`),
	}
}

// IsOverflow reports whether an error text is a provider's refusal of a
// prompt larger than the model's context window. Rate limits that happen
// to mention tokens ("tokens per minute", TPM) are not overflows.
func IsOverflow(msg string) bool {
	t := strings.ToLower(msg)
	if t == "" {
		return false
	}
	if strings.Contains(t, "tokens per min") || strings.Contains(t, "rate limit") || strings.Contains(t, " tpm") {
		return false
	}
	for _, p := range overflowPhrases {
		if strings.Contains(t, p) {
			return true
		}
	}
	for _, re := range overflowPatterns() {
		if re.MatchString(t) {
			return true
		}
	}
	return false
}
