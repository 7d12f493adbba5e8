package commands

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"agt/state"
)

func permissionsCommand() *cli.Command {
	return &cli.Command{
		Name:  "permissions",
		Usage: "list the permission requests agents wait on",
		UsageText: "agt permissions [--json] [NAME...]\n\n" +
			"Lists the pending permission requests of conversation agents (every agent without NAME),\n" +
			"oldest first: the inbox that agt approve and agt deny answer.\n\n" +
			"EXAMPLES:\n" +
			"   agt permissions\n" +
			"   agt permissions | jq -r '\"agt approve \\(.agent) \\(.id)\"'",
		Flags:  []cli.Flag{jsonFlag()},
		Action: runPermissions,
	}
}

// permissionRow is one pending request as permissions/ID.json holds it, with its agent.
type permissionRow struct {
	Agent   string          `json:"agent"`
	ID      string          `json:"id"`
	Tool    string          `json:"tool"`
	Input   json.RawMessage `json:"input,omitempty"`
	Options json.RawMessage `json:"options,omitempty"`
	Seq     int64           `json:"seq"`
	TS      time.Time       `json:"ts"`
}

func runPermissions(c *cli.Context) error {
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	agents, err := targets(c, "", true)
	if err != nil {
		return err
	}
	var rows []permissionRow
	for _, a := range agents {
		dir := a.Path(state.PermissionsDir)
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // none asked
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			b, err := readSmallRegular(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			r := permissionRow{Agent: a.Name}
			if json.Unmarshal(b, &r) == nil && r.ID != "" {
				rows = append(rows, r)
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].TS.Before(rows[j].TS) })
	if out.mode == modeTable {
		table := make([][]string, len(rows))
		now := time.Now()
		for i, r := range rows {
			table[i] = []string{r.Agent, r.ID, r.Tool, oneLine(string(r.Input), 60), since(r.TS, now)}
		}
		return out.table([]string{"AGENT", "ID", "TOOL", "INPUT", "FOR"}, table)
	}
	for _, r := range rows {
		if err := out.item(r, nil); err != nil {
			return err
		}
	}
	return nil
}

// readSmallRegular reads a regular file of at most 1 MiB without following a symlink or
// blocking on a FIFO.
func readSmallRegular(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		return nil, os.ErrInvalid
	}
	b := make([]byte, fi.Size())
	_, err = io.ReadFull(f, b)
	return b, err
}

// oneLine cuts s to n runes on one line.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
