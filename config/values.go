package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseSize reads "64MiB", "512KiB", "1GiB" or a number of bytes.
func parseSize(text string) (int64, error) {
	s := strings.TrimSpace(text)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(v), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a size such as 64MiB, 512KiB or a number of bytes, got %q", text)
	}
	return n * mult, nil
}

// tomlType names a Go type of the config file as TOML would.
func tomlType(goType string) string {
	t := strings.TrimLeft(goType, "*")
	switch {
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "int"):
		return "an integer"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "map[") || strings.HasPrefix(t, "config."):
		return "a table"
	}
	return t
}

// parseDuration reads a Go duration such as 30s or 5m; it must not be negative.
func parseDuration(text string) (time.Duration, error) {
	v, err := time.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("want a duration such as 30s or 5m, got %q", text)
	}
	if v < 0 {
		return 0, fmt.Errorf("duration %q must not be negative", text)
	}
	return v, nil
}

// Defaults of the top-level keys.
const (
	DefaultIdleAfter   = 5 * time.Second
	DefaultStaleAfter  = 10 * time.Minute
	DefaultStallAfter  = 5 * time.Minute
	DefaultStopTimeout = 30 * time.Second
	// DefaultConnectTimeout bounds the wait for an ACP agent's answer to initialize.
	DefaultConnectTimeout = 30 * time.Second
	DefaultLogMaxSize     = 64 << 20
)
