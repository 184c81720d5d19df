package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// reply is a buffered response.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func jsonReply(status int, v any) *reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	r := &reply{status: status, header: http.Header{}, body: b}
	r.header.Set("Content-Type", "application/json; charset=utf-8")
	return r
}

const docsURL = "https://docs.github.com/rest"

func errReply(status int, msg string) *reply {
	return jsonReply(status, map[string]any{"message": msg, "documentation_url": docsURL, "status": strconv.Itoa(status)})
}

// validationReply is GitHub's 422 with an errors list.
func validationReply(resource, field, code, msg string) *reply {
	e := map[string]any{"resource": resource, "code": code}
	if field != "" {
		e["field"] = field
	}
	if msg != "" {
		e["message"] = msg
	}
	return jsonReply(422, map[string]any{"message": "Validation Failed", "errors": []any{e},
		"documentation_url": docsURL, "status": "422"})
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func nodeID(kind string, id int64) string { return fmt.Sprintf("%s_%d", kind, id) }

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case int:
		return n
	}
	return 0
}
