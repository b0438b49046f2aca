package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	ucli "github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/secret"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/view"
)

// Runner runs plan commands against injected streams.
type Runner struct {
	Stdout io.Writer
	Stderr io.Writer
	Stdin  io.Reader
	// Interactive says stdin is a terminal a person answers prompts on.
	Interactive bool
	// ProgressTerminal says stderr is a terminal where progress bars may be drawn.
	ProgressTerminal bool
	// Version is printed by --version.
	Version string
	// Dir is the directory relative paths (-C, a plan file) are resolved from; "" means the
	// process's working directory. Setting it lets many runs share a process without os.Chdir.
	Dir string
	// Getenv reads the S3 endpoint and credentials (AWS_*), NO_COLOR, TERM and the pager; nil
	// means os.Getenv.
	Getenv func(string) string
	// OutputTerminal says stdout is a terminal: text is painted (--color=auto) and long text goes
	// through a pager.
	OutputTerminal bool
	// StartWatch lets the agents' hooks start `plan watch` in the background at the start of a
	// turn, as a process of this same executable: DefaultRunner (the plan binary) sets it; a
	// Runner inside another program (a host, a test binary) leaves it off, since its executable
	// is not plan.
	StartWatch bool
	// MCP serves `plan mcp` once the command has found the workspace, root: interfaces/mcp.Serve,
	// which cmd/plan sets (that package imports this one, so DefaultRunner cannot). nil makes
	// `plan mcp` fail (exit 1) saying so.
	MCP func(ctx context.Context, r *Runner, root string) error
}

// handler holds one invocation's state; a Runner creates a fresh one per Run.
type handler struct {
	r    *Runner
	root string
	json bool
	yes  bool
	// forceRoot allows a new workspace at the file system root or the home directory.
	forceRoot bool
	// quiet drops progress and narration from stderr.
	quiet    bool
	notFound error
	// pending is an operation a crash interrupted that this (read-only) command left alone.
	pending *port.Operation
	// exactRoot says root is the workspace itself, not where to start looking for one: init and
	// clone name the directory they make a workspace of.
	exactRoot bool
	// fresh is what plan init (or clone) asks of a new workspace: its store, database and ID.
	fresh struct {
		store, db, id string
		newHistory    bool
	}
	// noNotice keeps open from printing a re-attach notice (init says so itself).
	noNotice bool
	// noKeepAttached keeps a command from making a deleted .plan/ again at its end (the watch
	// service, which stops because .plan/ went).
	noKeepAttached bool
	// parsed releases parseMu; called when the command's flags are parsed, and at the end.
	parsed func()
	// argv is the command line after the program name, for the operation log, with the
	// credentials of every URL in it removed (the log is shared and recorded in the store).
	argv []string
	// op is the running command's operation log entry, when it is one the log keeps.
	op *opLog
	// colors paints the text output (off with --json, off the terminal, with NO_COLOR).
	colors palette
	// noPager keeps long text out of a pager; path is the running command ("checkpoint list").
	noPager bool
	path    string
	// lockWait, when set, is how long the command waits for the workspace lock (plan hook).
	lockWait time.Duration
	// dashed says the command's positional arguments began with "--", which the flag parser
	// consumes: `plan diff -- PATH` names paths only, no checkpoint.
	dashed bool
}

// parseMu serialises urfave/cli's flag parsing: v2 applies its --help and --version flags, which
// are package variables of that library, by writing to them, so two runs parsing at once race.
// The only package-level state here, and it guards a dependency's, not ours.
var parseMu sync.Mutex

// Run executes args (args[0] is the program name) and returns the exit code. Runs may overlap
// (a host or a test suite running many at once); only flag parsing is serialised: the lock is
// released once the command's own flags are parsed, before its action runs.
func (r *Runner) Run(ctx context.Context, args []string) int {
	h := &handler{r: r}
	defer h.startTimings()()
	if len(args) > 1 {
		h.argv = secret.Args(args[1:])
	}
	parseMu.Lock()
	h.parsed = sync.OnceFunc(parseMu.Unlock)
	app := h.app()
	if n := len(args); n > 1 && args[n-1] == completionFlag && !slices.Contains(args, "--") {
		h.parsed()
		h.complete(ctx, app, args[1:n-1])
		return ExitOK
	}
	reordered, dashed := reorder(app, args)
	h.dashed = dashed
	err := app.RunContext(ctx, reordered)
	h.parsed()
	if err == nil && h.notFound != nil {
		err = h.notFound
	}
	if err == nil {
		return ExitOK
	}
	var se *silentExit
	if errors.As(err, &se) {
		return se.code
	}
	code, kind := exitCode(err)
	if h.json {
		var v view.Error
		v.Error.Kind, v.Error.Message, v.Code = kind, err.Error(), code
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintln(r.Stderr, string(b))
	} else {
		_, _ = fmt.Fprintf(r.Stderr, "plan: %s\n", scrub(err.Error()))
	}
	return code
}

func (h *handler) app() *ucli.App {
	app := &ucli.App{
		Name:                 "plan",
		Usage:                "safe, fast undo for automated work",
		Version:              h.r.Version,
		Writer:               h.r.Stdout,
		ErrWriter:            h.r.Stderr,
		Reader:               h.r.Stdin,
		HideHelpCommand:      true,
		EnableBashCompletion: true, // the hidden --generate-bash-completion `plan completion` scripts use
		// urfave/cli adds --help only while no command is named help; plan help is one.
		Flags:          append(globalFlags(), ucli.HelpFlag),
		Before:         h.before,
		ExitErrHandler: func(*ucli.Context, error) {},
		// Reached only through help (`plan --help NAME`), which runs before h.before: take --json
		// from here so the error is the JSON document --json promises.
		CommandNotFound: func(c *ucli.Context, name string) {
			h.json = c.Bool("json")
			h.notFound = unknownCommand(name, c.App.Commands)
		},
		Action:   groupAction,
		Commands: h.commands(),
	}
	app.OnUsageError = onUsageError
	setUsageHandlers(app.Commands)
	h.releaseAfterParsing(app.Commands)
	app.CustomAppHelpTemplate = groupedHelpTemplate(app.Commands) + exitStatusHelp
	setExitStatusHelp(app.Commands)
	return app
}

// exitStatuses are the exit codes every help page and the man page end with, as restic's do:
// scripts decide on these numbers (docs/exit-codes.md has them in full).
var exitStatuses = []struct {
	code int
	text string
}{
	{ExitOK, "success"},
	{ExitInternal, "internal error, a decision or validation that failed, or a store or database out of reach (retry later)"},
	{ExitUsage, "usage (unknown command or flag, missing argument, missing --yes without a terminal)"},
	{ExitInvalid, "invalid input"},
	{ExitNotFound, "not found (checkpoint, decision, correction, workspace)"},
	{ExitConflict, "conflict (workspace busy, an operation state that forbids this)"},
	{ExitIntegrity, "integrity (damaged or missing data)"},
	{ExitDenied, "denied (credentials or permission refused)"},
	{ExitDeclined, "declined (a prompt answered no; nothing changed)"},
	{ExitInterrupted, "interrupted"},
}

// exitStatusHelp is the EXIT STATUS section of the help pages, wrapped at 100 columns.
var exitStatusHelp = func() string {
	var b strings.Builder
	b.WriteString("\nEXIT STATUS:\n")
	line := "  "
	for i, e := range exitStatuses {
		text := e.text + ";"
		if i == len(exitStatuses)-1 {
			text = e.text + ". See docs/exit-codes.md."
		}
		words := strings.Fields(text)
		words[0] = fmt.Sprintf("%d %s", e.code, words[0]) // a code never ends a line
		for _, w := range words {
			if len(line)+1+len(w) > 100 {
				b.WriteString(line + "\n")
				line = "  "
			}
			line += " " + w
		}
	}
	b.WriteString(line + "\n")
	return b.String()
}()

func setExitStatusHelp(cmds []*ucli.Command) {
	for _, c := range cmds {
		if len(c.Subcommands) > 0 {
			c.CustomHelpTemplate = ucli.SubcommandHelpTemplate + exitStatusHelp
			setExitStatusHelp(c.Subcommands)
			continue
		}
		c.CustomHelpTemplate = ucli.CommandHelpTemplate + exitStatusHelp
	}
}

// releaseAfterParsing makes every leaf command release the flag-parsing lock in its Before hook,
// which urfave/cli calls once the command's flags are parsed and before its action.
func (h *handler) releaseAfterParsing(cmds []*ucli.Command) {
	for _, c := range cmds {
		if len(c.Subcommands) > 0 {
			h.releaseAfterParsing(c.Subcommands)
			if c.Action == nil {
				continue
			}
		}
		required := takeRequired(c)
		c.Before = func(c *ucli.Context) error {
			if h.parsed != nil {
				h.parsed()
			}
			for _, name := range required {
				if !c.IsSet(name) {
					return usagef("missing --%s (see `plan %s --help`)", name, commandPath(c))
				}
			}
			h.startOp(c)
			return nil
		}
	}
}

// takeRequired makes the command's required flags optional for urfave/cli and returns their names:
// urfave/cli reports a missing one as a plain error (exit 1), and the contract wants a missing flag
// to be a usage error (exit 2), which Before then returns. The help still says "required".
func takeRequired(c *ucli.Command) []string {
	var names []string
	for _, f := range c.Flags {
		if sf, ok := f.(*ucli.StringFlag); ok && sf.Required {
			sf.Required = false
			if !strings.Contains(sf.Usage, "required") {
				sf.Usage += " (required)"
			}
			names = append(names, sf.Name)
		}
	}
	return names
}

func globalFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "workspace", Aliases: []string{"C"}, Usage: "start in `DIR` instead of the current directory (like git -C): the workspace is found from there, and relative paths are taken from DIR", Value: "."},
		&ucli.BoolFlag{Name: "json", Usage: "print one JSON document"},
		&ucli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "answer yes to confirmations"},
		&ucli.BoolFlag{Name: "force-root", Usage: "allow a new workspace at the file system root or your home directory"},
		&ucli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress, no decision output or narration on stderr (warnings and errors still)"},
		&ucli.StringFlag{Name: "color", Usage: "paint text output: `WHEN` auto (on a terminal, unless NO_COLOR is set), always or never", Value: "auto"},
		&ucli.BoolFlag{Name: "no-pager", Usage: "never send long output through a pager (PLAN_PAGER, PAGER, less)"},
	}
}

func (h *handler) before(c *ucli.Context) error {
	h.root, h.json, h.yes, h.forceRoot = c.String("workspace"), c.Bool("json"), c.Bool("yes"), c.Bool("force-root")
	h.quiet, h.noPager = c.Bool("quiet"), c.Bool("no-pager")
	on, err := colorMode(c.String("color"), h.r.OutputTerminal, h.getenv)
	if err != nil {
		return err
	}
	h.colors = palette{on: on && !h.json}
	root, err := h.resolveRoot()
	h.root = root
	return err
}

// resolveRoot is h.root (-C DIR, "." when not given) made absolute, relative to the directory the
// command runs in.
func (h *handler) resolveRoot() (string, error) {
	if filepath.IsAbs(h.root) {
		return h.root, nil
	}
	base := h.r.Dir
	if base == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("the current directory: %w", err)
		}
		base = wd
	}
	return filepath.Join(base, h.root), nil
}

// workspaceRoot is the workspace the command works on: the one that holds the directory it started
// in (h.root), found as git finds .git; h.root itself when there is none (opening it then says it
// is not a workspace) or when the command named its directory outright (clone, init).
func (h *handler) workspaceRoot() (string, error) {
	if h.exactRoot {
		return h.root, nil
	}
	root, found, err := bootstrap.Discover(h.root, filepath.SplitList(h.getenv("PLAN_CEILING_DIRECTORIES")))
	if err == nil && !found {
		// A workspace that lost its .plan/ is still one: its commands say so (and init there,
		// or an agent's hook, re-attaches it).
		if former, ok := bootstrap.Former(h.root, h.getenv); ok {
			return former, nil
		}
	}
	return root, err
}

func (h *handler) getenv(name string) string {
	if h.r.Getenv != nil {
		return h.r.Getenv(name)
	}
	return os.Getenv(name)
}

// onUsageError turns urfave/cli's flag errors into usage errors (exit 2); an unknown flag is named
// as it was typed, with the nearest flag of the command (or a global one) when it is likely a typo.
func onUsageError(c *ucli.Context, err error, _ bool) error {
	name, unknown := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !unknown {
		return usagef("%v", err)
	}
	name = strings.TrimPrefix(name, "-")
	flags := slices.Clone(c.App.Flags)
	path := "plan --help"
	if c.Command != nil && c.Command.Name != "" && c.Command.Name != c.App.Name {
		flags = append(flags, c.Command.Flags...)
		path = "plan " + commandPath(c) + " --help"
	}
	dash := "--"
	if len(name) == 1 {
		dash = "-"
	}
	best, score := "", 0.0
	for _, f := range flags {
		for _, n := range f.Names() {
			if d := smetrics.JaroWinkler(name, n, 0.7, 4); d > score && len(n) > 1 {
				best, score = n, d
			}
		}
	}
	if score >= 0.8 {
		return usagef("unknown flag %s%s: did you mean --%s? (see `%s`)", dash, name, best, path)
	}
	return usagef("unknown flag %s%s (see `%s`)", dash, name, path)
}

func setUsageHandlers(cmds []*ucli.Command) {
	for _, c := range cmds {
		c.OnUsageError = onUsageError
		dryRunShorthand(c)
		if len(c.Subcommands) > 0 {
			if c.Action == nil { // a group; plan watch also runs on its own
				c.Action = groupAction
			}
			setUsageHandlers(c.Subcommands)
			continue
		}
		// A leaf has no subcommands to show help for, and urfave/cli would otherwise add its own
		// package-level help command to it as it runs.
		c.HideHelpCommand = true
	}
}

// dryRunShorthand gives --dry-run its -n, as git, make and rsync spell it, on every command that
// has it and no other -n.
func dryRunShorthand(c *ucli.Command) {
	var dry *ucli.BoolFlag
	for _, f := range c.Flags {
		for _, n := range f.Names() {
			if n == "n" {
				return
			}
		}
		if b, ok := f.(*ucli.BoolFlag); ok && b.Name == "dry-run" {
			dry = b
		}
	}
	if dry != nil {
		dry.Aliases = append(dry.Aliases, "n")
	}
}

// unknownCommand is the usage error for a command name plan does not know, with the closest one it
// does know when one is close enough to be a typo.
func unknownCommand(name string, among []*ucli.Command) error {
	best, score := "", 0.0
	for _, c := range among {
		if c.Hidden {
			continue
		}
		for _, n := range c.Names() {
			if d := smetrics.JaroWinkler(name, n, 0.7, 4); d > score {
				best, score = n, d
			}
		}
	}
	if score >= 0.8 {
		return usagef("unknown command %q: did you mean %q? (see `plan --help`)", name, best)
	}
	return usagef("unknown command %q (see `plan --help`)", name)
}

// groupAction runs for a command group without a (known) subcommand.
func groupAction(c *ucli.Context) error {
	if c.Args().Present() {
		among := c.App.Commands
		if c.Command != nil && len(c.Command.Subcommands) > 0 {
			among = c.Command.Subcommands
		}
		return unknownCommand(c.Args().First(), among)
	}
	if c.Command == nil || c.Command.Name == "" || c.Command.Name == c.App.Name {
		_ = ucli.ShowAppHelp(c) // the app's template, rendered with the app
		return usagef("missing command (see `plan --help`)")
	}
	_ = ucli.ShowSubcommandHelp(c)
	return usagef("missing subcommand for %q (see `plan %s --help`)", commandPath(c), commandPath(c))
}

// open starts the application for the workspace; init creates .plan/ when missing. Any operation
// a crash left behind is recovered first and reported on stderr.
func (h *handler) open(ctx context.Context, init bool) (*bootstrap.App, error) {
	root, err := h.workspaceRoot()
	if err != nil {
		return nil, err
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{
		Root: root, Init: init, AllowDangerousRoot: h.forceRoot,
		Store: h.fresh.store, DB: h.fresh.db, WorkspaceID: h.fresh.id, NewHistory: h.fresh.newHistory,
		Getenv: h.r.Getenv, LockWait: h.lockWait,
	})
	if err != nil {
		return nil, err
	}
	if n := app.Services.Setup.Notice; n != "" && (!h.noNotice || !app.Services.Setup.Reattached) {
		h.warn(n)
	}
	return app, nil
}

// recoverFirst reports an operation a crash interrupted before a command runs. A command that
// changes the workspace recovers it when it takes the lock (and says so); a read-only command
// leaves it alone, because recovery changes the workspace.
func (h *handler) recoverFirst(ctx context.Context, app *bootstrap.App) error {
	app.Services.Maintenance.OnRecover(h.reportRecovery)
	res, err := app.Services.Maintenance.RecoverIfIdle(ctx)
	if err != nil {
		return err
	}
	if _, ok, err := readCloneMarker(app.Services.Layout.State()); ok || err != nil {
		h.warn("this workspace is a clone that was interrupted: `plan recover` finishes it")
	}
	if op := res.Pending; op != nil {
		h.pending = op
		_, _ = fmt.Fprintf(h.r.Stderr, "plan: an interrupted %s (%s) is pending and the workspace may be part-way through it: "+
			"run `plan recover` (any command that changes the workspace also finishes it first)\n", op.Kind, op.ID)
	}
	return nil
}

// reportRecovery tells the user what recovery did.
func (h *handler) reportRecovery(res application.RecoverResult) {
	if res.Recorded != "" {
		_, _ = fmt.Fprintf(h.r.Stderr, "plan: %d path(s) changed since the crash were recorded first as checkpoint %s\n",
			len(res.Unrecorded), res.Recorded)
	}
	_, _ = fmt.Fprintf(h.r.Stderr, "plan: recovered an interrupted %s (%s): %s\n",
		res.Operation.Kind, res.Operation.ID, scrub(res.Outcome))
}

// with opens the workspace, recovers, runs fn and closes the application.
func (h *handler) with(ctx context.Context, init bool, fn func(*bootstrap.App) error) (err error) {
	app, err := h.open(ctx, init)
	if err != nil {
		return err
	}
	defer func() {
		h.keepAttached(app)
		if cerr := app.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if err := h.recoverFirst(ctx, app); err != nil {
		return err
	}
	before := h.storeBytes(ctx, app)
	err = fn(app)
	h.recordOp(ctx, app, err)
	h.budget(ctx, app, before)
	h.dataBudget()
	h.consolidate(ctx, app)
	return err
}

// keepAttached makes the workspace's .plan/ again when the command's own work (a decision, an
// agent's tool call) deleted it, so that the next command finds its history as this one did.
func (h *handler) keepAttached(app *bootstrap.App) {
	if h.noKeepAttached {
		return
	}
	switch again, err := app.KeepAttached(); {
	case err != nil:
		h.warn(err.Error())
	case again:
		h.warn(fmt.Sprintf("%s/.plan was deleted while this command ran: made again (the history, kept outside the workspace, is whole)", app.Services.Layout.Root))
	}
}

// emit prints v as JSON with --json, else runs text.
func (h *handler) emit(v any, text func(w io.Writer)) error {
	if h.json {
		enc := json.NewEncoder(h.r.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	// One write, not one per field: a listing of hundreds of checkpoints was thousands of them.
	out := h.r.Stdout
	if pagedCommands[h.path] && h.r.OutputTerminal && !h.noPager {
		if p := h.startPager(); p != nil {
			defer p.wait()
			out = p
		}
	}
	w := bufio.NewWriter(out)
	text(w)
	return w.Flush()
}

// warn prints a warning on stderr; a message echoes what the user or an agent gave, so it is
// scrubbed of what a terminal would act on.
func (h *handler) warn(msg string) { _, _ = fmt.Fprintf(h.r.Stderr, "plan: warning: %s\n", scrub(msg)) }

func (h *handler) progress() port.Progress {
	if !h.r.ProgressTerminal || h.json || h.quiet {
		return nil
	}
	return &termProgress{w: h.r.Stderr}
}

// confirm asks for consent to a change. summary is shown before the question.
func (h *handler) confirm(what, summary string) error {
	if h.yes {
		return nil
	}
	if !h.r.Interactive {
		return usagef("%s needs confirmation and there is no terminal to ask on: pass --yes", what)
	}
	_, _ = fmt.Fprint(h.r.Stderr, summary)
	_, _ = fmt.Fprint(h.r.Stderr, "Continue? [y/N] ")
	line, err := bufio.NewReader(h.r.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return &declinedError{what: what}
}

// arg returns the n-th positional argument or a usage error naming it.
func arg(c *ucli.Context, n int, name string) (string, error) {
	if c.NArg() <= n {
		return "", usagef("missing argument %s (see `plan %s --help`)", name, commandPath(c))
	}
	return c.Args().Get(n), nil
}

// noExtraArgs refuses positional arguments beyond max.
func noExtraArgs(c *ucli.Context, maxArgs int) error {
	if c.NArg() > maxArgs {
		return usagef("unexpected argument %q (see `plan %s --help`)", c.Args().Get(maxArgs), commandPath(c))
	}
	return nil
}

// commandPath is the command's full name ("checkpoint show"); urfave/cli v2's FullName gives only
// the last word for subcommands.
func commandPath(c *ucli.Context) string {
	var names []string
	for _, x := range c.Lineage() {
		// The root contexts carry the program itself as a command; it is not part of the path.
		if x.Command != nil && x.Command.Name != "" && x.Command.Name != c.App.Name {
			names = append([]string{x.Command.Name}, names...)
		}
	}
	return strings.Join(names, " ")
}

// reorder lets flags follow positional arguments (`plan checkpoint show ID --files`), as users of git
// expect, and lets global flags follow the command. urfave/cli v2 stops parsing flags at the first
// positional argument, so flags are moved in front of them; everything after "--" stays as it is.
//
// It also says whether the command's positional arguments began with "--" (the flag parser drops
// that one, so the command cannot see it).
func reorder(app *ucli.App, args []string) ([]string, bool) {
	if len(args) == 0 {
		return args, false
	}
	out := []string{args[0]}
	rest := args[1:]
	// --help is the one flag of the app that is not global: after a command it asks for that
	// command's page, so it stays where it is.
	globals := flagArity(slices.DeleteFunc(slices.Clone(app.Flags), func(f ucli.Flag) bool { return f == ucli.HelpFlag }))
	// Leading global flags.
	i := 0
	for i < len(rest) && strings.HasPrefix(rest[i], "-") && rest[i] != "--" && rest[i] != "-" {
		i += takes(globals, rest[i])
	}
	if i > len(rest) {
		return args, false
	}
	out = append(out, rest[:i]...)
	rest = rest[i:]
	// The command path.
	cmds := app.Commands
	var leaf *ucli.Command
	var path []string
	for len(rest) > 0 {
		var found *ucli.Command
		for _, c := range cmds {
			if c.HasName(rest[0]) {
				found = c
			}
		}
		if found == nil {
			break
		}
		path = append(path, rest[0])
		rest = rest[1:]
		leaf = found
		if len(found.Subcommands) == 0 {
			break
		}
		cmds = found.Subcommands
	}
	if leaf == nil {
		return args, false
	}
	local := flagArity(leaf.Flags)
	var moveGlobal, flags, positional []string
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a == "--" {
			positional = append(positional, rest[j:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		n, isLocal := arity(local, a)
		if !isLocal {
			if gn, isGlobal := arity(globals, a); isGlobal {
				moveGlobal = append(moveGlobal, rest[j:min(j+gn, len(rest))]...)
				j += gn - 1
				continue
			}
		}
		flags = append(flags, rest[j:min(j+n, len(rest))]...)
		j += n - 1
	}
	out = append(out, moveGlobal...)
	out = append(out, path...)
	out = append(out, flags...)
	dashed := len(positional) > 0 && positional[0] == "--"
	if len(positional) > 0 && !dashed && len(flags) > 0 {
		// Keep positionals that look like flags from being parsed as flags.
		return append(append(out, "--"), positional...), false
	}
	return append(out, positional...), dashed
}

// flagArity maps every flag name to whether it takes a value.
func flagArity(fs []ucli.Flag) map[string]bool {
	m := map[string]bool{}
	for _, f := range fs {
		_, isBool := f.(*ucli.BoolFlag)
		for _, n := range f.Names() {
			m[n] = !isBool
		}
	}
	return m
}

// arity returns how many tokens flag token a consumes and whether it is defined in m.
func arity(m map[string]bool, a string) (int, bool) {
	name := strings.TrimLeft(a, "-")
	if k, _, hasValue := strings.Cut(name, "="); hasValue {
		_, ok := m[k]
		return 1, ok
	}
	takesValue, ok := m[name]
	if ok && takesValue {
		return 2, true
	}
	return 1, ok
}

func takes(m map[string]bool, a string) int {
	n, _ := arity(m, a)
	return n
}

// DefaultRunner returns a Runner on the process's standard streams.
func DefaultRunner(version string) *Runner {
	return &Runner{
		Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin,
		Interactive: isTerminal(os.Stdin), ProgressTerminal: isTerminal(os.Stderr), OutputTerminal: isTerminal(os.Stdout),
		Version: version, StartWatch: true,
	}
}

// Version describes the running binary: override when the build set one, else the module version
// and the VCS revision from the build information (`go install …@v1.2.3` records the version, a
// build in a git checkout the revision, with "+dirty" for uncommitted changes).
func Version(override string) string {
	if override != "" {
		return override
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return buildVersion(bi)
}

// buildVersion is the version bi records: the module version ("(devel)" when there is none), and
// the VCS revision when the build recorded one.
func buildVersion(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev != "" {
		return fmt.Sprintf("%s (revision %s%s)", v, rev, modified)
	}
	return v
}
