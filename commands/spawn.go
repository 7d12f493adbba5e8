package commands

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"agt/config"
	"agt/hosts"
	"agt/spawn"
	"agt/state"
	"agt/stream"
	"agt/termsafe"
)

func spawnCommand() *cli.Command {
	return &cli.Command{
		Name:  "spawn",
		Usage: "start a command as a supervised agent",
		UsageText: "agt spawn [flags] NAME [-- COMMAND [ARG...]]\n\n" +
			"Starts an agent (--agent KIND) or any COMMAND in its own session under a detached\n" +
			"supervisor and returns once it runs, printing the spawned event.\n\n" +
			"EXAMPLES:\n" +
			"   agt spawn --agent claude --prompt 'fix the login bug' fix-auth\n" +
			"   agt spawn --agent codex --prompt-file task.md --model gpt-5 review\n" +
			"   agt spawn demo -- sh -c 'echo hello; sleep 30'\n" +
			"   agt spawn --env DEBUG=1 --dir ~/src/app build -- make -j4\n" +
			"   agt spawn --wait check -- go vet ./...      # exits with the command's code\n" +
			"   agt spawn --wait --rm ci-tests -- make test   # a CI step: the name is free again after\n" +
			"   agt spawn --tty --agent claude helper        # its own TUI, attached; Ctrl-\\ detaches\n" +
			"   agt spawn --tty --detach edit -- vim notes.md # on a terminal of its own, for agt attach\n" +
			"   agt spawn --count 3 --agent claude --prompt 'fix the login bug' fix   # fix-1, fix-2, fix-3\n" +
			"   agt spawn --agent claude,codex --prompt 'fix the login bug' fix       # fix-1 (claude), fix-2 (codex)\n" +
			"   agt spawn --sandbox --agent claude --prompt 'fix the build' fixer  # changes its workspace only\n" +
			"   agt spawn --on swarm --image my-agent:1 --wait --rm ci -- make test   # a Docker Swarm service\n" +
			"   agt spawn --on k8s --image my-agent:1 --dry-run ci -- make test | kubectl create -f -",
		Description: helpText("spawn"),
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "agent", Aliases: []string{"a"}, Usage: "the `KIND` of agent: claude, codex, opencode, gemini, or one from agt.toml (default: exec when a command follows --, else $AGT_AGENT, else default_agent); a list (claude,codex) starts one of each as NAME-1, NAME-2…"},
			&cli.IntFlag{Name: "count", Usage: "start `N` agents on the same task, NAME-1…NAME-N, each in a workspace of its own (a group, which ps shows)"},
			&cli.StringFlag{Name: "prompt", Aliases: []string{"p"}, Usage: "the task for the agent"},
			&cli.StringFlag{Name: "prompt-file", Usage: "read the prompt from `FILE` (- for stdin)"},
			&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "the model the agent uses (default $AGT_MODEL, for agent kinds)"},
			&cli.BoolFlag{Name: "plan", Usage: "plan only, where the agent kind has a plan mode (claude, opencode, gemini; plan_args in agt.toml)"},
			&cli.BoolFlag{Name: "converse", Usage: "keep the agent for a conversation: agt send gives it turns, agt approve and deny answer its permission requests (claude; converse_args in agt.toml)", EnvVars: []string{"AGT_CONVERSE"}},
			&cli.BoolFlag{Name: "tty", Usage: "run the agent on a terminal of its own: its interactive interface, for agt attach", DefaultText: "the kind's tty in agt.toml, else false", EnvVars: []string{"AGT_TTY"}},
			&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "with --tty on a terminal: do not attach, print the spawned event"},
			&cli.StringSliceFlag{Name: "arg", Usage: "append `ARG` to the agent's argv (repeatable)"},
			&cli.StringFlag{Name: "dir", Usage: "working directory (default: the current one)", EnvVars: []string{"AGT_DIR"}},
			&cli.StringSliceFlag{Name: "env", Usage: "add `KEY=VALUE` to the agent's environment (repeatable)"},
			&cli.StringFlag{Name: "workspace", Usage: "where the agent works: auto, jj, git or none (default: auto for agent kinds, none for a plain command; or [workspace] mode)", EnvVars: []string{"AGT_WORKSPACE_MODE"}},
			&cli.StringFlag{Name: "base", Usage: "the revision the workspace starts from (jj: @ or @-, git: HEAD; default $AGT_BASE when there is a workspace)"},
			durationFlag("timeout", "t", "grace between SIGTERM and SIGKILL when stopping (a duration, or seconds)", "30s, or stop_timeout", "AGT_STOP_TIMEOUT"),
			durationFlag("idle-after", "", "terminal agents: silence after which a running agent is waiting", "5s, or idle_after", "AGT_IDLE_AFTER"),
			durationFlag("stall-after", "", "silence inside a turn after which an agent is stale (stalled); 0 never", "5m, or stall_after", "AGT_STALL_AFTER"),
			durationFlag("stale-after", "", "time waiting after which an agent is stale", "10m, or stale_after", "AGT_STALE_AFTER"),
			&cli.StringFlag{Name: "restart", Usage: "restart policy: on-failure, always or never (default: on-failure for agent kinds; never for a plain command, or with --wait; or restart in agt.toml)", EnvVars: []string{"AGT_RESTART"}},
			&cli.IntFlag{Name: "max-restarts", Usage: "failures in a row before the agent is failed for good", DefaultText: "5, or max_restarts", EnvVars: []string{"AGT_MAX_RESTARTS"}},
			&cli.Float64Flag{Name: "max-cost", Usage: "the agent's budget in `USD`: past it, it ends failed (budget)", DefaultText: "max_cost, or none", EnvVars: []string{"AGT_MAX_COST"}},
			&cli.IntFlag{Name: "max-agents", Usage: "refuse to start when this many agents are alive (0: no limit)", DefaultText: "max_agents, or no limit", EnvVars: []string{"AGT_MAX_AGENTS"}},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "print the agent's events until it ends (Ctrl-C detaches)"},
			&cli.BoolFlag{Name: "wait", Usage: "print the agent's events and exit with its exit code; a conversation (--converse, ACP kinds) until its first turn ends: 0 ok, 1 failed, 4 when it stops to ask you (Ctrl-C, SIGTERM or SIGHUP stops it; a second one kills it)"},
			&cli.BoolFlag{Name: "rm", Usage: "with --wait: remove the agent's record when it ends (its workspace too, unless it holds unsaved work)", EnvVars: []string{"AGT_RM"}},
			jsonFlag(),
			formatFlag("spawn", stream.Event{}, "{{.agent}} {{.pid}}"),
		}, append(sandboxFlags(), engineFlags()...)...),
		Action: runSpawn,
	}
}

// exitFull is spawn's exit status when max_agents agents are alive already (EX_TEMPFAIL).
const exitFull = 75

func runSpawn(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return usagef(c, "missing NAME: agt spawn [flags] NAME -- COMMAND [ARG...]")
	}
	name, argv := args[0], args[1:]
	if dashBeforeName(c) {
		return usagef(c, "missing NAME before --: agt spawn [flags] NAME -- %s", strings.Join(args, " "))
	}
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	} else if err := flagsAfterName(c, name, argv); err != nil {
		return err
	}
	if err := validNewName(name); err != nil {
		return cli.Exit(err, 2)
	}
	if err := checkEngineFlags(c); err != nil {
		return err
	}
	if isGroupSpawn(c) {
		return spawnGroup(c, name, argv)
	}
	if c.Bool("rm") && !c.Bool("wait") {
		return rmNeedsWait(c, name)
	}
	opts, cfg, err := spawnOptions(c, name, argv)
	if err != nil {
		return err
	}
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	d, err := openRunDir(c)
	if err != nil {
		return err
	}
	opts.Root = d.Root
	// A slow start (an ACP agent's handshake, a workspace's set-up) shows a status line.
	var phase atomic.Pointer[string]
	setPhase := func(s string) { phase.Store(&s) }
	setPhase("starting " + name)
	status := startStatus(c.App.ErrWriter, func() string { return *phase.Load() })
	if opts.Prepare, err = workspacePrepare(c, cfg.Workspace, name, opts.Cwd, opts.Kind == config.Exec, programOf(opts.Argv, opts.Kind == config.Exec), status); err != nil {
		status.stop()
		return err
	}
	if prep := opts.Prepare; prep != nil {
		opts.Prepare = func() (string, json.RawMessage, func(), error) {
			setPhase("setting up the workspace of " + name)
			defer setPhase("starting " + name)
			return prep()
		}
	}
	spawned, err := spawn.Start(c.Context, opts)
	status.stop()
	if err != nil {
		if errors.Is(err, spawn.ErrFull) {
			return cli.Exit(err.Error(), exitFull) // spawn --host a,b tries the next host
		}
		if errors.Is(err, state.ErrNameTaken) {
			return withHint(err, fmt.Sprintf("pick another name, or free this one: 'agt stop %s' if it runs, then 'agt rm %s'", name, name))
		}
		return err
	}
	follow, wait := c.Bool("follow"), c.Bool("wait")
	// A terminal agent spawned on a terminal is attached to at once; never in a pipe.
	attachNow := opts.TTY && !follow && !wait && !c.Bool("detach") && isTerminal(os.Stdin) && isTerminal(c.App.Writer)
	if !follow && !wait && !attachNow {
		return printSpawned(out, spawned)
	}
	a, err := d.Agent(name)
	if err != nil {
		return err
	}
	if attachNow {
		keys, err := detachKeys(c)
		if err != nil {
			return err
		}
		return attach(c, a, keys)
	}
	if out.mode == modeTable {
		out.view = newTranscript(out, []string{name})
	}
	if !wait {
		return followEvents(c.Context, out, []*state.Agent{a}, tailFilter{last: -1}, nil) // Ctrl-C detaches
	}
	return waitSpawned(c, out, a)
}

// dashBeforeName reports whether spawn's command line puts -- before NAME (agt spawn -- true):
// urfave/cli drops such a --, and the command's first word would be taken for the name.
func dashBeforeName(c *cli.Context) bool {
	args := os.Args
	i := slices.Index(args, c.Command.Name)
	if i < 0 {
		return false
	}
	for i++; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return true
		case !strings.HasPrefix(a, "-") || a == "-":
			return false // NAME came first
		case takesValue(c.Command, a) && !strings.Contains(a, "="):
			i++
		}
	}
	return false
}

// validNewName checks the name of a new agent: agt's rule, and what git refuses in a branch
// name (agt/NAME): "..", a trailing "." or ".lock".
func validNewName(name string) error {
	if err := state.ValidateName(name); err != nil {
		return err
	}
	if strings.Contains(name, "..") || strings.HasSuffix(name, ".") || strings.HasSuffix(name, ".lock") {
		return fmt.Errorf("invalid agent name %q: no \"..\", and no \".\" or \".lock\" at the end (the name goes into a git branch)", name)
	}
	return nil
}

func spawnOptions(c *cli.Context, name string, argv []string) (spawn.Options, *config.Config, error) {
	return spawnOptionsFor(c, name, argv, c.String("agent"), func() (*string, error) { return readPrompt(c) })
}

// spawnOptionsFor is spawnOptions for an agent of kind kindName ("" as for no --agent), with
// the prompt that readIt reads: spawn --count reads it once for all.
func spawnOptionsFor(c *cli.Context, name string, argv []string, kindName string, readIt func() (*string, error)) (spawn.Options, *config.Config, error) {
	dir := c.String("dir")
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return spawn.Options{}, nil, fmt.Errorf("find the current directory: %w", err)
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return spawn.Options{}, nil, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return spawn.Options{}, nil, fmt.Errorf("working directory %s is not a directory\nhint: give --dir an existing directory", dir)
	}
	env := c.StringSlice("env")
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return spawn.Options{}, nil, usagef(c, "--env %q: want KEY=VALUE", kv)
		}
	}
	for _, f := range []string{"timeout", "idle-after", "stale-after", "stall-after"} {
		if flagDuration(c, f) < 0 {
			return spawn.Options{}, nil, usagef(c, "--%s %s: must not be negative", f, flagDuration(c, f))
		}
	}
	cfg, err := config.Load(dir)
	if err != nil {
		return spawn.Options{}, nil, err
	}
	if err := checkHook(cfg.OnState); err != nil {
		return spawn.Options{}, nil, err
	}
	kind, err := pickKind(c, cfg, name, argv, kindName)
	if err != nil {
		return spawn.Options{}, nil, err
	}
	prompt, err := readIt()
	if err != nil {
		return spawn.Options{}, nil, err
	}
	tty := kind.TTY
	if c.IsSet("tty") {
		tty = c.Bool("tty")
	}
	converse := c.Bool("converse") || (kind.Converse || kind.Stdin == config.StdinACP) && !tty
	if tty && converse {
		return spawn.Options{}, nil, usagef(c, "--converse and --tty do not mix: a terminal agent takes what you type (agt attach, agt send)")
	}
	if tty {
		kind = kind.OnTTY()
	}
	turns := false
	if converse {
		switch kind.ConverseMode() {
		case config.ConverseStdin:
			kind = kind.Conversing()
		case config.ConverseTurns:
			turns = true // a process per turn, each resuming the session
		default:
			return spawn.Options{}, nil, usagef(c, "agent kind %s cannot converse: it takes no messages (set converse_args, or stdin = \"stream-json\", or a resume argv with stdin = \"prompt\", in agt.toml)", kind.Name)
		}
	}
	opts := spawn.Options{
		Spec: state.Spec{
			Name: name, Kind: kind.Name, Cwd: dir,
			Format: kind.Format, Stdin: kind.Stdin, Model: c.String("model"),
			StopTimeout:    durationSetting(c, "timeout", cfg.StopTimeout),
			ConnectTimeout: state.Duration(cfg.ConnectTimeout),
			IdleAfter:      durationSetting(c, "idle-after", cfg.IdleAfter),
			StaleAfter:     durationSetting(c, "stale-after", cfg.StaleAfter),
			StallAfter:     durationSetting(c, "stall-after", cfg.StallAfter),
			Environ:        spawn.RecordEnviron(os.Environ()),
			Allow:          cfg.Policy.Allow, Deny: cfg.Policy.Deny,
			MaxCost: cfg.MaxCost,
			OnState: cfg.OnState, HookTimeout: state.Duration(cfg.HookTimeout),
			Notify:       notifySpec(cfg.Notify),
			ResumePrompt: kind.ResumePrompt,
			Restart:      cfg.Restart.Policy, MaxRestarts: cfg.Restart.MaxRestarts,
			RestartDelay:    state.Duration(cfg.Restart.Delay),
			RestartMaxDelay: state.Duration(cfg.Restart.MaxDelay),
			HealthyAfter:    state.Duration(cfg.Restart.HealthyAfter),
			LogMaxSize:      cfg.LogMaxSize,
		},
		Prompt: prompt, MaxAgents: cfg.MaxAgents, MaxCostTotal: cfg.MaxCostTotal,
	}
	if c.IsSet("max-cost") {
		if v := c.Float64("max-cost"); v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return spawn.Options{}, nil, usagef(c, "--max-cost %v: want a number of USD, 0 or more", v)
		}
		opts.MaxCost = c.Float64("max-cost")
	}
	switch {
	case c.String("restart") != "":
		if err := config.ValidRestart(c.String("restart")); err != nil {
			return spawn.Options{}, nil, usagef(c, "--restart: %v", err)
		}
		opts.Restart = c.String("restart")
	case (c.Bool("wait") || kind.Name == config.Exec) && !cfg.Restart.PolicySet:
		// A plain command runs once, as it would in a shell, and so does a CI step: each
		// reports how it ended, unless restarts are asked for.
		opts.Restart = config.RestartNever
	}
	for _, f := range []struct {
		name string
		dst  *int
	}{{"max-restarts", &opts.MaxRestarts}, {"max-agents", &opts.MaxAgents}} {
		if c.IsSet(f.name) {
			if c.Int(f.name) < 0 {
				return spawn.Options{}, nil, usagef(c, "--%s %d: must not be negative", f.name, c.Int(f.name))
			}
			*f.dst = c.Int(f.name)
		}
	}
	for _, key := range sortedKeys(kind.Env) {
		opts.Env = append(opts.Env, key+"="+kind.Env[key])
	}
	opts.Env = append(opts.Env, env...)
	if opts.Model == "" && kind.TakesModel() {
		opts.Model = os.Getenv("AGT_MODEL") // a default: a kind that takes no model (a plain command) ignores it
	}
	opts.ConverseTurns = turns
	if tty {
		opts.TTY, opts.Term = true, ttyTerm()
		opts.Rows, opts.Cols = ttySize()
		opts.InputScreen, opts.PermissionScreen = kind.InputScreen, kind.PermissionScreen
		opts.BusyScreen, opts.RetryScreen, opts.ErrorScreen = kind.BusyScreen, kind.RetryScreen, kind.ErrorScreen
	}
	if opts.Sandbox, err = sandboxSpec(c, cfg, kind, opts.Env); err != nil {
		return spawn.Options{}, nil, err
	}
	extras := config.Extras{Model: opts.Model, Plan: c.Bool("plan"), Converse: converse && !turns, Sandbox: opts.Sandbox != nil, Args: c.StringSlice("arg")}
	if kind.Name == config.Exec {
		if opts.Model != "" || extras.Plan {
			return spawn.Options{}, nil, usagef(c, "--model and --plan need an agent kind (--agent); a plain command takes its own flags")
		}
		// A plain command is taken literally: agt substitutes nothing in it.
		for _, a := range append(argv, extras.Args...) {
			opts.Argv = append(opts.Argv, strings.ReplaceAll(a, "$", "$$"))
		}
		return opts, cfg, nil
	}
	if opts.Argv, err = kind.Template(false, extras); err != nil {
		return spawn.Options{}, nil, err
	}
	if len(kind.Resume) > 0 {
		if opts.Resume, err = kind.Template(true, extras); err != nil {
			opts.Resume = nil // a kind may resume without taking these extras; restarts start fresh
		}
	}
	switch {
	case (config.NeedsPrompt(opts.Argv) || kind.NeedsPrompt()) && prompt == nil && !tty:
		return spawn.Options{}, nil, usagef(c, "agent kind %s needs a prompt: give --prompt TEXT or --prompt-file FILE", kind.Name)
	case prompt != nil && !kind.TakesPrompt() && !tty:
		return spawn.Options{}, nil, usagef(c, "agent kind %s takes no prompt: its start has no $AGT_PROMPT and its stdin is none (set start or stdin in agt.toml)", kind.Name)
	}
	if kind.SessionUUID {
		opts.SessionID, opts.NewSession = spawn.NewSessionID(), true
	}
	opts.SessionFile, opts.ForgetsInterrupted = kind.SessionFile, kind.ForgetsInterrupted
	return opts, cfg, nil
}

// ttyTerm is the TERM of a terminal agent: the spawning terminal's, else xterm-256color.
func ttyTerm() string {
	if t := os.Getenv("TERM"); t != "" && t != "dumb" {
		return t
	}
	return "xterm-256color"
}

// ttySize is the first size of a terminal agent's terminal: the spawning one's, else 80x24.
func ttySize() (rows, cols int) {
	for _, f := range []*os.File{os.Stdout, os.Stdin, os.Stderr} {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Row > 0 && ws.Col > 0 {
			return int(ws.Row), int(ws.Col)
		}
	}
	return 24, 80
}

// pickKind decides what to run: --agent KIND, else a command after -- (exec), else the
// configured default_agent.
func pickKind(c *cli.Context, cfg *config.Config, name string, argv []string, kindName string) (*config.Kind, error) {
	switch {
	case kindName != "" && len(argv) > 0 && kindName != config.Exec:
		return nil, usagef(c, "give --agent %s or a command after --, not both (pass the agent's own flags with --arg)", kindName)
	case kindName == "" && len(argv) > 0:
		kindName = config.Exec
	case kindName == "":
		// $AGT_AGENT is a default like default_agent, not a flag: a command after -- beats it.
		if kindName = os.Getenv("AGT_AGENT"); kindName == "" {
			kindName = cfg.DefaultAgent
		}
	}
	if kindName == "" {
		return nil, usagef(c, "missing COMMAND or --agent: agt spawn [flags] %s -- COMMAND [ARG...], or agt spawn --agent KIND %s", name, name)
	}
	kind, err := cfg.Kind(kindName)
	if err != nil {
		return nil, cli.Exit(err.Error(), 2)
	}
	if kind.Name == config.Exec && len(argv) == 0 {
		return nil, usagef(c, "missing COMMAND: agt spawn [flags] %s -- COMMAND [ARG...]", name)
	}
	return kind, nil
}

// readPrompt returns the prompt from --prompt or --prompt-file (- is stdin), nil for none.
func readPrompt(c *cli.Context) (*string, error) {
	text, file := c.String("prompt"), c.String("prompt-file")
	switch {
	case c.IsSet("prompt") && file != "":
		return nil, usagef(c, "give --prompt or --prompt-file, not both")
	case c.IsSet("prompt"):
		return &text, nil
	case file == "":
		return nil, nil
	}
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("read prompt: %w", err)
	}
	p := string(b)
	return &p, nil
}

// durationSetting is a flag's value when it was given, else the configured one.
func durationSetting(c *cli.Context, flag string, configured time.Duration) state.Duration {
	if c.IsSet(flag) {
		return state.Duration(flagDuration(c, flag))
	}
	return state.Duration(configured)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// printSpawned prints the spawned event: as is in NDJSON, through the template, or as one
// human line.
func printSpawned(out *output, line []byte) error {
	if out.mode != modeTable {
		return printEvent(out, line)
	}
	var argv []string
	for _, a := range gjson.GetBytes(line, "argv").Array() {
		argv = append(argv, a.String())
	}
	_, err := fmt.Fprintln(out.w, termsafe.Line(fmt.Sprintf("started %s (pid %d): %s",
		gjson.GetBytes(line, "agent").String(), gjson.GetBytes(line, "pid").Int(), hosts.Words(argv))))
	if where := workspaceLine(gjson.GetBytes(line, "workspace")); err == nil && where != "" {
		_, err = fmt.Fprintf(out.w, "  works in %s\n", termsafe.Line(where))
	}
	return err
}

// workspaceLine says where an agent works, from the workspace of its spawned event: "PATH
// (git worktree on branch agt/x, from 2e247cbced35)"; "" for none.
func workspaceLine(ws gjson.Result) string {
	path := ws.Get("path").String()
	if path == "" {
		return ""
	}
	base := ws.Get("base").String()
	if len(base) > 12 {
		base = base[:12]
	}
	switch ws.Get("type").String() {
	case "git":
		return fmt.Sprintf("%s (git worktree on branch %s, from %s)", path, ws.Get("branch").String(), base)
	case "jj":
		return fmt.Sprintf("%s (jj workspace %s, on top of %s)", path, ws.Get("name").String(), base)
	}
	return path
}

// exitWithAgent ends the command with the agents' exit code: the first non-zero one; 1 with a
// note for an agent whose end nobody saw.
func exitWithAgent(c *cli.Context, agents []*state.Agent) error {
	code := 0
	for _, a := range agents {
		st := spawn.Observe(a)
		n, ok := spawn.ExitCode(st)
		if !ok {
			fmt.Fprintf(c.App.ErrWriter, "agt: %s is %s (%s): its exit code is unknown\n", a.Name, st.State, st.Reason)
			n = 1
		}
		if code == 0 {
			code = n
		}
	}
	if code != 0 {
		return cli.Exit("", code)
	}
	return nil
}
