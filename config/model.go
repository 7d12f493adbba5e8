package config

import (
	"encoding/json"
	"os"
	"path/filepath"

	toml "github.com/pelletier/go-toml/v2"
)

// ConfiguredModel returns the model an agent of a format uses when agt gives it none, as its
// own configuration file names it, or "" when unknown. Codex and opencode never say which model
// they use in their output, so ps would show nothing for them otherwise. getenv is the
// agent's environment (HOME, CODEX_HOME, XDG_CONFIG_HOME decide where the files are).
func ConfiguredModel(format string, getenv func(string) string) string {
	switch format {
	case "codex":
		dir := getenv("CODEX_HOME")
		if dir == "" {
			dir = homeDir(getenv, ".codex")
		}
		var f struct {
			Model string `toml:"model"`
		}
		if readSmallFile(filepath.Join(dir, "config.toml"), func(b []byte) error { return toml.Unmarshal(b, &f) }) {
			return f.Model
		}
	case "opencode":
		dir := getenv("XDG_CONFIG_HOME")
		if dir == "" {
			dir = homeDir(getenv, ".config")
		}
		var f struct {
			Model string `json:"model"`
		}
		for _, name := range []string{"opencode.json", "config.json"} {
			if readSmallFile(filepath.Join(dir, "opencode", name), func(b []byte) error { return json.Unmarshal(b, &f) }) && f.Model != "" {
				return f.Model
			}
		}
	}
	return ""
}

func homeDir(getenv func(string) string, sub string) string {
	home := getenv("HOME")
	if home == "" {
		return ""
	}
	return filepath.Join(home, sub)
}

// readSmallFile decodes a regular file of at most 1 MiB; false when there is none or it does
// not decode (opencode's file may hold comments: then the model stays unknown).
func readSmallFile(path string, decode func([]byte) error) bool {
	if path == "" || !filepath.IsAbs(path) {
		return false
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		return false
	}
	b, err := os.ReadFile(path)
	return err == nil && decode(b) == nil
}
