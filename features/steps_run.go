package features

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cucumber/godog"

	"github.com/planhq/plan/interfaces/cli"
	"github.com/planhq/plan/interfaces/mcp"
)

// commandTimeout bounds one command, so a hang fails its scenario instead of the whole test binary.
const commandTimeout = 60 * time.Second

func (s *scenario) registerRunSteps(sc *godog.ScenarioContext) {
	// One expression for every form of "I run": godog refuses, in strict mode, a step that two
	// expressions match, and a command may itself hold quotes.
	sc.Step(`^I run "(.*?)"(?: (and remember the checkpoint as|and remember the backup as|with the failpoint) "([^"]*)")?$`, s.iRun)
	sc.Step(`^I will answer "([^"]*)"$`, s.iWillAnswer)
	sc.Step(`^a checkpoint "([^"]*)"$`, s.aCheckpoint)
	sc.Step(`^I remember the JSON output "([^"]*)" as "([^"]*)"$`, s.iRememberTheJSONOutput)
}

// runOptions are what a command runs with besides its arguments.
type runOptions struct {
	failpoint string // PLAN_FAILPOINT; forces a real process
	json      bool   // add --json when the command lacks it
}

func (s *scenario) iRun(command, suffix, arg string) error {
	switch suffix {
	case "":
		return s.run(command, runOptions{})
	case "with the failpoint":
		return s.run(command, runOptions{failpoint: arg})
	case "and remember the checkpoint as":
		return s.runAndRemember(command, "id", arg)
	case "and remember the backup as":
		return s.runAndRemember(command, "backup_checkpoint_id", arg)
	}
	return fmt.Errorf("unknown form of `I run`: %q", suffix)
}

// runAndRemember runs command with --json, requires success and remembers the ID at field as name.
func (s *scenario) runAndRemember(command, field, name string) error {
	if err := s.run(command, runOptions{json: true}); err != nil {
		return err
	}
	if err := s.itSucceeds(); err != nil {
		return err
	}
	return s.iRememberTheJSONOutput(field, name)
}

// aCheckpoint takes a checkpoint and remembers its ID, the workspace it recorded and the pack files
// it wrote as name.
func (s *scenario) aCheckpoint(name string) error {
	before, err := s.packFiles()
	if err != nil {
		return err
	}
	if err := s.runAndRemember("plan checkpoint create --note "+strconv.Quote(name), "id", name); err != nil {
		return err
	}
	after, err := s.packFiles()
	if err != nil {
		return err
	}
	s.packs[name] = nil
	for _, p := range after {
		if !slices.Contains(before, p) {
			s.packs[name] = append(s.packs[name], p)
		}
	}
	return s.iRememberTheWorkspace(name)
}

func (s *scenario) iRememberTheJSONOutput(field, name string) error {
	if name == "workspace" || name == "outside" || name == "plans" {
		return fmt.Errorf("%q is a built-in placeholder; pick another name", name)
	}
	doc, err := s.jsonDoc("output")
	if err != nil {
		return err
	}
	v, err := lookup(doc, field)
	if err != nil {
		return err
	}
	id, ok := v.(string)
	if !ok || id == "" {
		return fmt.Errorf("%q is %v, not an ID", field, v)
	}
	s.ids[name] = id
	return nil
}

func (s *scenario) iWillAnswer(answer string) error {
	a := unescape(answer) + "\n"
	s.answer = &a
	return nil
}

// run runs one plan command line in the workspace and records its outcome. The line is split like a
// shell would split it (double or single quotes group words) after placeholders are expanded.
func (s *scenario) run(command string, opt runOptions) error {
	if s.unchecked {
		return s.uncheckedError()
	}
	if s.ws == "" {
		return errors.New("no workspace yet: start the scenario with `Given a workspace`")
	}
	expanded, err := s.expand(command)
	if err != nil {
		return err
	}
	args, err := splitArgs(expanded)
	if err != nil {
		return err
	}
	if len(args) == 0 || args[0] != "plan" {
		return fmt.Errorf("a command must start with `plan`: %q", command)
	}
	if opt.json && !slices.Contains(args, "--json") {
		args = append([]string{args[0], "--json"}, args[1:]...)
	}
	stdin, interactive := "", false
	if s.answer != nil {
		stdin, interactive = *s.answer, true
		s.answer = nil
	}
	var out, errOut bytes.Buffer
	var code int
	began := time.Now()
	switch {
	case s.h.Binary != "" || opt.failpoint != "":
		bin, err := s.h.processBinary()
		if err != nil {
			return err
		}
		code, err = s.runProcess(bin, args, stdin, interactive, opt.failpoint, &out, &errOut)
		if err != nil {
			return err
		}
	default:
		code, err = s.runInProcess(args, stdin, interactive, &out, &errOut)
		if err != nil {
			return err
		}
	}
	s.cmdline = strings.Join(args, " ")
	if opt.failpoint != "" {
		s.cmdline = "PLAN_FAILPOINT=" + opt.failpoint + " " + s.cmdline
	}
	s.stdout, s.stderr, s.exitCode = out.String(), errOut.String(), code
	s.elapsed = time.Since(began)
	s.unchecked = code != 0
	return nil
}

// runInProcess runs args through cli.Runner with the workspace as its directory, as the binary run
// there would. The process's working directory is never changed, so scenarios run concurrently.
func (s *scenario) runInProcess(args []string, stdin string, interactive bool, out, errOut io.Writer) (int, error) {
	r := cli.Runner{Stdout: out, Stderr: errOut, Stdin: strings.NewReader(stdin), Interactive: interactive, Dir: s.ws, Getenv: s.getenv,
		MCP: mcp.Serve}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	return r.Run(ctx, args), nil
}

// runProcess runs the binary. A terminal answer is given through a pseudo-terminal, so the binary
// sees a real terminal on stdin exactly as it would with a person at the keyboard. A process killed
// by a signal reports 128+signal, as a shell does.
func (s *scenario) runProcess(bin string, args []string, stdin string, interactive bool, failpoint string, out, errOut io.Writer) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args[1:]...)
	cmd.Dir = s.ws
	cmd.Stdout, cmd.Stderr = out, errOut
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLAN_FAILPOINT=") {
			env = append(env, kv)
		}
	}
	if failpoint != "" {
		env = append(env, "PLAN_FAILPOINT="+failpoint)
	}
	cmd.Env = s.processEnv(env)
	switch {
	case interactive:
		master, slave, err := openPTY()
		if err != nil {
			return 0, fmt.Errorf("a terminal for the answer: %w", err)
		}
		defer func() { _ = master.Close() }()
		defer func() { _ = slave.Close() }()
		// The line discipline holds the answer until the process reads its stdin; the echo it
		// produces is a few bytes, far below what the terminal buffers, so nobody needs to read it.
		if _, err := io.WriteString(master, stdin); err != nil {
			return 0, err
		}
		cmd.Stdin = slave
	case stdin != "":
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	if ctx.Err() != nil {
		return 0, fmt.Errorf("%s did not finish within %s", strings.Join(args, " "), commandTimeout)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, fmt.Errorf("run %s: %w", bin, err)
}

// splitArgs splits a command line into words: blanks separate words, double or single quotes group
// them (a backslash escapes a double quote inside double quotes).
func splitArgs(line string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch c {
		case ' ', '\t':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		case '"', '\'':
			inWord = true
			j := i + 1
			for ; j < len(line) && line[j] != c; j++ {
				if c == '"' && line[j] == '\\' && j+1 < len(line) && (line[j+1] == '"' || line[j+1] == '\\') {
					j++
				}
				cur.WriteByte(line[j])
			}
			if j == len(line) {
				return nil, fmt.Errorf("unterminated quote in %q", line)
			}
			i = j
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}

// jsonDoc parses stdout ("output") or stderr ("error") as exactly one JSON document.
func (s *scenario) jsonDoc(which string) (any, error) {
	src, name := s.stdout, "stdout"
	if which == "error" {
		src, name = s.stderr, "stderr"
	}
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s of `%s` is not a JSON document: %w\n%s", name, s.cmdline, err, src)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s of `%s` holds more than one JSON document:\n%s", name, s.cmdline, src)
	}
	return v, nil
}
