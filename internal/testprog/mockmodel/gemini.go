package mockmodel

// Gemini's generateContent: the API of Gemini CLI.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

type geminiAPI struct{}

func (geminiAPI) name() string { return "gemini" }

func (geminiAPI) parse(r *http.Request, body []byte) *conv {
	model, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             string `json:"text"`
				Thought          bool   `json:"thought"`
				FunctionResponse *struct {
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType   string         `json:"responseMimeType"`
			ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
			ResponseSchema     map[string]any `json:"responseSchema"`
		} `json:"generationConfig"`
	}
	json.Unmarshal(body, &req)
	c := &conv{model: model, stream: method == "streamGenerateContent"}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			c.tools = append(c.tools, f.Name)
			if f.Name == "run_shell_command" {
				c.shell = f.Name
			}
		}
	}
	for _, content := range req.Contents {
		if content.Role != "user" {
			continue
		}
		var texts []string
		for _, p := range content.Parts {
			switch {
			case p.FunctionResponse != nil:
				c.result(string(p.FunctionResponse.Response), false)
			case !p.Thought:
				texts = append(texts, p.Text)
			}
		}
		c.userText(texts)
	}
	if gc := req.GenerationConfig; gc.ResponseMimeType == "application/json" {
		c.schema = gc.ResponseJSONSchema
		if c.schema == nil {
			c.schema = gc.ResponseSchema
		}
		if c.schema == nil {
			c.schema = map[string]any{"type": "object"}
		}
	}
	return c
}

func (geminiAPI) writeError(w http.ResponseWriter, c *conv, p plan, seq int) {
	var status, msg string
	switch p.errKind {
	case "auth":
		status, msg = "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."
	case "rate":
		status, msg = "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."
	case "server":
		status, msg = "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	case "model":
		status, msg = "NOT_FOUND", "models/"+c.model+" is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."
	}
	writeJSON(w, p.status, map[string]any{"error": map[string]any{"code": p.status, "message": msg, "status": status}})
}

// geminiAnswer writes a generateContent answer: SSE chunks when streamed, else one response.
type geminiAnswer struct {
	s     *sse // nil: not streamed
	w     http.ResponseWriter
	c     *conv
	seq   int
	parts []any // for an answer not streamed
	done  bool  // the last chunk (finishReason) went out
}

func (geminiAPI) answer(w http.ResponseWriter, c *conv, seq int) answerWriter {
	a := &geminiAnswer{w: w, c: c, seq: seq}
	if c.stream {
		a.s = newSSE(w)
	}
	return a
}

func (a *geminiAnswer) chunk(parts []any, finish bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish {
		cand["finishReason"] = "STOP"
	}
	return map[string]any{"candidates": []any{cand}, "modelVersion": a.c.model, "responseId": fmt.Sprintf("mock-%d", a.seq),
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}}
}

func (a *geminiAnswer) text(t string) {
	part := map[string]any{"text": t}
	if a.s == nil {
		a.parts = append(a.parts, part)
		return
	}
	a.s.event("", a.chunk([]any{part}, false))
}

func (a *geminiAnswer) tool(cmd string) {
	part := map[string]any{"functionCall": map[string]any{"name": "run_shell_command",
		"args": map[string]any{"command": cmd, "description": "Run a command"}}}
	if a.s == nil {
		a.parts = append(a.parts, part)
		return
	}
	// The call and the end of the answer come in one chunk, as the real API sends them.
	a.s.event("", a.chunk([]any{part}, true))
	a.done = true
}

func (a *geminiAnswer) end() {
	switch {
	case a.s == nil:
		writeJSON(a.w, 200, a.chunk(a.parts, true))
	case !a.done:
		a.s.event("", a.chunk([]any{map[string]any{"text": ""}}, true))
	}
}
