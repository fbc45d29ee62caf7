// Package logtail reads the end of a log file, for error messages and failure reports.
package logtail

import (
	"os"
	"strings"
)

// Lines returns the last n lines of the file at path (all of them when there are fewer), without the
// final newline. With maxBytes > 0 only the file's last maxBytes bytes are considered, so a huge last
// line cannot flood the caller's message.
func Lines(path string, n, maxBytes int) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if maxBytes > 0 && len(data) > maxBytes {
		data = data[len(data)-maxBytes:]
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return all[max(0, len(all)-n):], nil
}
