package images

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// instruction is one Dockerfile instruction with its continuation lines joined.
type instruction struct {
	line int    // 1-based line where it starts
	cmd  string // upper case, e.g. "LABEL"
	args string
}

// parseDockerfile reads the instructions of a Dockerfile. It knows comments, blank lines and
// backslash continuations, which is all the Dockerfiles checked here use; heredocs and escape
// directives are not supported.
func parseDockerfile(file string) ([]instruction, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read Dockerfile: %w", err)
	}
	defer func() { _ = f.Close() }()
	var out []instruction
	var cur *instruction
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cont := strings.HasSuffix(text, "\\")
		text = strings.TrimSpace(strings.TrimSuffix(text, "\\"))
		if cur == nil {
			cmd, args, _ := strings.Cut(text, " ")
			cur = &instruction{line: n, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		} else {
			cur.args = strings.TrimSpace(cur.args + " " + text)
		}
		if !cont {
			out = append(out, *cur)
			cur = nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: %s ends with a line continuation", file, cur.line, cur.cmd)
	}
	return out, nil
}

// words splits shell-style: whitespace separates, quotes group and are removed, backslash escapes.
func words(s string) ([]string, error) {
	var out []string
	var w strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			w.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, fmt.Errorf("unterminated quote or escape in %q", s)
	}
	if inWord {
		out = append(out, w.String())
	}
	return out, nil
}

// labels parses LABEL arguments: key=value pairs, or the legacy single `key value`.
func labels(args string) (map[string]string, error) {
	ws, err := words(args)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if len(ws) > 0 && !strings.Contains(ws[0], "=") {
		if len(ws) < 2 {
			return nil, fmt.Errorf("LABEL %q has no value", args)
		}
		out[ws[0]] = strings.Join(ws[1:], " ")
		return out, nil
	}
	for _, w := range ws {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("LABEL word %q is not key=value", w)
		}
		out[k] = v
	}
	return out, nil
}

// execForm parses the JSON (exec) form of RUN, CMD and ENTRYPOINT.
func execForm(args string) ([]string, error) {
	var out []string
	if err := json.Unmarshal([]byte(args), &out); err != nil {
		return nil, fmt.Errorf("%q is not the exec (JSON array) form: write it as [\"program\", \"arg\", ...]", args)
	}
	return out, nil
}

// copySpec parses COPY/ADD arguments into sources and destination, skipping --flags.
func copySpec(args string) (srcs []string, dst string, err error) {
	var ws []string
	if strings.HasPrefix(args, "[") {
		ws, err = execForm(args)
	} else {
		ws, err = words(args)
	}
	if err != nil {
		return nil, "", err
	}
	for len(ws) > 0 && strings.HasPrefix(ws[0], "--") {
		ws = ws[1:]
	}
	if len(ws) < 2 {
		return nil, "", fmt.Errorf("%q needs a source and a destination", args)
	}
	return ws[:len(ws)-1], ws[len(ws)-1], nil
}

// dockerfileErrors collects the problems of one Dockerfile, each with its file and line.
type dockerfileErrors struct {
	file string
	errs []error
}

func (d *dockerfileErrors) add(line int, format string, a ...any) {
	loc := d.file
	if line > 0 {
		loc = fmt.Sprintf("%s:%d", d.file, line)
	}
	d.errs = append(d.errs, fmt.Errorf("%s: %s", loc, fmt.Sprintf(format, a...)))
}

func (d *dockerfileErrors) err() error { return errors.Join(d.errs...) }
