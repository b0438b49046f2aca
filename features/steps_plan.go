package features

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cucumber/godog"
)

func (s *scenario) registerPlanSteps(sc *godog.ScenarioContext) {
	// Plan files and fresh workspaces.
	sc.Step(`^a plan file "([^"]*)" with:$`, s.aPlanFileWith)
	sc.Step(`^the tree a fresh workspace has after "(.*)" is remembered as "([^"]*)"$`, s.theTreeAFreshWorkspaceHasAfter)

	// Decisions in the JSON output of plan status (or plan run).
	sc.Step(`^the JSON output has decision "([^"]*)" with artifacts:$`, s.decisionWithArtifacts)
	sc.Step(`^the JSON output has decision "([^"]*)" with attempts:$`, s.decisionWithAttempts)
	sc.Step(`^every decision's checkpoint_id in the JSON output names its pre_decision checkpoint$`, s.everyDecisionsCheckpointIsItsPreDecision)

	// Killing a plan mid-run.
	sc.Step(`^I start "(.*)" and kill it once "([^"]*)" exists$`, s.iStartAndKillOnce)
	sc.Step(`^no process is left running in the workspace$`, s.noProcessIsLeftRunning)
	sc.Step(`^it took less than (\d+) seconds$`, s.itTookLessThan)

	// Outputs compared across commands.
	sc.Step(`^I remember the output as "([^"]*)"$`, s.iRememberTheOutput)
	sc.Step(`^the output equals the one remembered as "([^"]*)"$`, s.theOutputEqualsRemembered)
	sc.Step(`^I remember the JSON output's "([^"]*)" as "([^"]*)"$`, s.iRememberTheJSONPart)
	sc.Step(`^the JSON output's "([^"]*)" equals the one remembered as "([^"]*)"$`, s.theJSONPartEqualsRemembered)

	// Correction archives and directories under .plan.
	sc.Step(`^the archive of correction "([^"]*)" holds exactly:$`, s.theArchiveHoldsExactly)
	sc.Step(`^"([^"]*)" is an empty directory$`, s.isAnEmptyDirectory)
	sc.Step(`^"([^"]*)" holds no visible entries$`, s.holdsNoVisibleEntries)
	sc.Step(`^"([^"]*)" holds only "([^"]*)"$`, s.holdsOnly)
}

// aPlanFileWith writes a plan file under <plans>, outside the workspace: the plan's decisions change
// the workspace, and a workspace compared with another must not differ by the plan file itself.
func (s *scenario) aPlanFileWith(name string, doc *godog.DocString) error {
	if !filepath.IsLocal(name) {
		return fmt.Errorf("plan file name %q must be a plain relative name", name)
	}
	p := filepath.Join(s.plans, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(doc.Content+"\n"), 0o600)
}

// theTreeAFreshWorkspaceHasAfter runs command in a new, empty workspace next to the scenario's,
// requires it to succeed, and remembers the tree it leaves. The scenario's workspace and its last
// command are as they were afterwards.
func (s *scenario) theTreeAFreshWorkspaceHasAfter(command, name string) error {
	if s.unchecked {
		return s.uncheckedError()
	}
	fresh, err := os.MkdirTemp(s.root, "fresh-")
	if err != nil {
		return err
	}
	saved, ws := s.saveLast(), s.ws
	s.ws = fresh
	err = s.run(command, runOptions{})
	if err == nil {
		err = s.itSucceeds()
	}
	var snap snapshot
	if err == nil {
		snap, err = takeSnapshot(fresh)
	}
	s.ws = ws
	s.restoreLast(saved)
	if err != nil {
		return fmt.Errorf("in a fresh workspace: %w", err)
	}
	s.snapshots[name] = snap
	return nil
}

// decision finds the decision with id in the "decisions" of the last JSON output.
func (s *scenario) decision(id string) (map[string]any, error) {
	arr, err := s.jsonArray("decisions")
	if err != nil {
		return nil, err
	}
	for _, item := range arr {
		if d, ok := item.(map[string]any); ok && d["id"] == id {
			return d, nil
		}
	}
	return nil, fmt.Errorf("no decision %q in the JSON output:\n%s", id, indent(arr))
}

func sum256(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// decisionWithArtifacts checks that the decision recorded exactly the table's artifacts: each row's
// path and change, and the size and SHA-256 of its content, computed here from the content the
// table gives (a symlink's content is its target; a deleted file's is what it held).
func (s *scenario) decisionWithArtifacts(id string, table *godog.Table) error {
	d, err := s.decision(id)
	if err != nil {
		return err
	}
	arts, ok := d["artifacts"].([]any)
	if !ok {
		return fmt.Errorf("decision %q has no artifacts array: %s", id, show(d))
	}
	rows := tableRows(table)
	if err := requireColumns(rows, "path", "change", "content"); err != nil {
		return err
	}
	col := columns(rows[0])
	var problems []string
	if len(arts) != len(rows)-1 {
		problems = append(problems, fmt.Sprintf("%d artifacts recorded, want %d", len(arts), len(rows)-1))
	}
	for _, row := range rows[1:] {
		path, content := row[col["path"]], row[col["content"]]
		var art map[string]any
		for _, a := range arts {
			if m, ok := a.(map[string]any); ok && m["path"] == path {
				art = m
			}
		}
		if art == nil {
			problems = append(problems, "no artifact "+path)
			continue
		}
		want := map[string]string{
			"change": row[col["change"]], "size": strconv.Itoa(len(content)), "sha256": sum256([]byte(content)),
		}
		if want["change"] == "added dir" { // an empty directory the decision created: no content
			want = map[string]string{"change": "added", "size": "0", "sha256": ""}
		}
		for _, k := range []string{"change", "size", "sha256"} {
			if err := matchValue(art[k], want[k]); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s %v", path, k, err))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the artifacts of %q are not the expected ones:\n  %s\nrecorded:\n%s", id, strings.Join(problems, "\n  "), indent(arts))
	}
	return nil
}

func (s *scenario) decisionWithAttempts(id string, table *godog.Table) error {
	d, err := s.decision(id)
	if err != nil {
		return err
	}
	arr, ok := d["attempts"].([]any)
	if !ok {
		return fmt.Errorf("decision %q has no attempts array: %s", id, show(d))
	}
	missing, rows, err := s.matchRows(arr, table)
	if err != nil {
		return err
	}
	if len(missing) > 0 || rows != len(arr) {
		return fmt.Errorf("the attempts of %q are not exactly the %d rows (unmatched: %v):\n%s", id, rows, missing, indent(arr))
	}
	return nil
}

var fullID = regexp.MustCompile(`^[0-9a-f]{24}$`)

// everyDecisionsCheckpointIsItsPreDecision asks `plan checkpoint show` about the checkpoint_id of every
// decision in the last JSON output that has one: it must be a distinct 24-hex ID of a pre_decision
// checkpoint whose decision_id is that decision. The last command stays the one checked.
func (s *scenario) everyDecisionsCheckpointIsItsPreDecision() error {
	arr, err := s.jsonArray("decisions")
	if err != nil {
		return err
	}
	saved := s.saveLast()
	defer s.restoreLast(saved)
	seen := map[string]string{}
	for _, item := range arr {
		d, _ := item.(map[string]any)
		id, _ := d["id"].(string)
		cp, ok := d["checkpoint_id"].(string)
		if !ok {
			continue
		}
		if !fullID.MatchString(cp) {
			return fmt.Errorf("decision %q has checkpoint_id %q, not a 24-hex ID", id, cp)
		}
		if other, dup := seen[cp]; dup {
			return fmt.Errorf("decisions %q and %q share checkpoint %s", other, id, cp)
		}
		seen[cp] = id
		if err := s.run("plan --json checkpoint show "+cp, runOptions{}); err != nil {
			return err
		}
		if err := s.itSucceeds(); err != nil {
			return err
		}
		for field, want := range map[string]string{"id": cp, "type": "pre_decision", "decision_id": id} {
			if err := s.jsonHasEqual("output", field, want); err != nil {
				return fmt.Errorf("the checkpoint of decision %q: %w", id, err)
			}
		}
	}
	if len(seen) == 0 {
		return errors.New("no decision in the JSON output has a checkpoint_id")
	}
	return nil
}

// iStartAndKillOnce starts command as a real plan process in the workspace, waits until the
// workspace path marker exists (a decision writes it once it has started), then kills the process
// with SIGKILL, like a crash or `kill -9`. The outcome is recorded like any command's: the next step
// must assert it (`the process was killed`).
func (s *scenario) iStartAndKillOnce(command, marker string) error {
	if s.unchecked {
		return s.uncheckedError()
	}
	if s.ws == "" {
		return errors.New("no workspace yet: start the scenario with `Given a workspace`")
	}
	markerPath, err := s.path(marker)
	if err != nil {
		return err
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
	bin, err := s.h.processBinary()
	if err != nil {
		return err
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args[1:]...) // #nosec G204 -- the plan binary under test
	cmd.Dir = s.ws
	cmd.Stdout, cmd.Stderr = &out, &errOut
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLAN_FAILPOINT=") {
			env = append(env, kv)
		}
	}
	cmd.Env = s.processEnv(env)
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(commandTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case werr := <-done:
			return fmt.Errorf("%s ended (%w) before %s appeared\nstdout:\n%s\nstderr:\n%s", expanded, werr, marker, out.String(), errOut.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			werr := <-done
			return fmt.Errorf("%s did not write %s within %s (then: %w)", expanded, marker, commandTimeout, werr)
		case <-tick.C:
			// Wait for content, not mere existence: the shell creates the file before it writes,
			// and a kill in between would record an empty marker.
			if fi, err := os.Lstat(markerPath); err == nil && fi.Size() > 0 {
				break wait
			}
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	werr := <-done
	code := 0
	var ee *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	default:
		return werr
	}
	s.cmdline = "kill -9 (" + strings.Join(args, " ") + ")"
	s.stdout, s.stderr, s.exitCode, s.elapsed = out.String(), errOut.String(), code, time.Since(began)
	s.unchecked = code != 0
	return nil
}

// processesIn lists the processes (other than this one) whose working directory is dir or below it.
func processesIn(dir string) (map[int]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	found := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+string(filepath.Separator))) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")) // #nosec G304 -- /proc
		found[pid] = strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return found, nil
}

// killProcessesIn kills, by process ID, what a scenario started and left running in its directory:
// the processes of a decision whose plan the scenario killed.
func killProcessesIn(dir string) error {
	procs, err := processesIn(dir)
	if err != nil {
		return err
	}
	for pid := range procs {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill %d (%s): %w", pid, procs[pid], err)
		}
	}
	return nil
}

func (s *scenario) noProcessIsLeftRunning() error {
	procs, err := processesIn(s.ws)
	if err != nil {
		return err
	}
	if len(procs) > 0 {
		var lines []string
		for pid, cmd := range procs {
			lines = append(lines, fmt.Sprintf("%d: %s", pid, cmd))
		}
		sort.Strings(lines)
		return fmt.Errorf("processes are still running in the workspace:\n  %s", strings.Join(lines, "\n  "))
	}
	return nil
}

func (s *scenario) itTookLessThan(seconds int) error {
	if err := s.ran(); err != nil {
		return err
	}
	if s.elapsed >= time.Duration(seconds)*time.Second {
		return fmt.Errorf("`%s` took %s, want less than %ds", s.cmdline, s.elapsed.Round(time.Millisecond), seconds)
	}
	return nil
}

func (s *scenario) iRememberTheOutput(name string) error {
	if err := s.ran(); err != nil {
		return err
	}
	s.outputs[name] = s.stdout
	return nil
}

// iRememberTheJSONPart remembers one part of the JSON output (re-encoded), for a later comparison
// of that part alone.
func (s *scenario) iRememberTheJSONPart(field, name string) error {
	part, err := s.jsonPart(field)
	if err != nil {
		return err
	}
	s.outputs[name] = part
	return nil
}

func (s *scenario) theJSONPartEqualsRemembered(field, name string) error {
	want, ok := s.outputs[name]
	if !ok {
		return fmt.Errorf("no output remembered as %q", name)
	}
	got, err := s.jsonPart(field)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%q of `%s` is\n%s\nwant (remembered as %q)\n%s", field, s.cmdline, got, name, want)
	}
	return nil
}

func (s *scenario) jsonPart(field string) (string, error) {
	doc, err := s.jsonDoc("output")
	if err != nil {
		return "", err
	}
	v, err := lookup(doc, field)
	if err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	return string(b), err
}

func (s *scenario) theOutputEqualsRemembered(name string) error {
	want, ok := s.outputs[name]
	if !ok {
		return fmt.Errorf("no output remembered as %q", name)
	}
	if s.stdout != want {
		return fmt.Errorf("stdout of `%s` is\n%s\nwant (remembered as %q)\n%s", s.cmdline, s.stdout, name, want)
	}
	return nil
}

// manifestEntry is one artifact of an archive's manifest.json, flattened with its decision.
type manifestEntry struct {
	decision string
	attempt  json.Number
	fields   map[string]any
}

func readManifest(dir, correctionID string) ([]manifestEntry, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json")) // #nosec G304 -- inside the scenario
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m struct {
		CorrectionID string `json:"correction_id"`
		Decisions    []struct {
			DecisionID string           `json:"decision_id"`
			Attempt    json.Number      `json:"attempt"`
			Artifacts  []map[string]any `json:"artifacts"`
		} `json:"decisions"`
	}
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if m.CorrectionID != correctionID {
		return nil, fmt.Errorf("manifest.json names correction %q, want %q", m.CorrectionID, correctionID)
	}
	var out []manifestEntry
	for _, d := range m.Decisions {
		for _, a := range d.Artifacts {
			out = append(out, manifestEntry{decision: d.DecisionID, attempt: d.Attempt, fields: a})
		}
	}
	return out, nil
}

// archivedHash hashes an archived artifact as the store does: a file's content, a symlink's target.
func archivedHash(p string) (content []byte, mode fs.FileMode, err error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(p)
		return []byte(t), fi.Mode(), err
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(p) // #nosec G304 -- inside the scenario
		return b, fi.Mode(), err
	}
	return nil, fi.Mode(), fmt.Errorf("%s is a %v, not an archived artifact", p, fi.Mode().Type())
}

// theArchiveHoldsExactly checks archive/<correction>/ in the workspace's history directory: manifest.json lists exactly the table's
// rows (decision_id, path, change, optional attempt) with the size and SHA-256 of the row's content;
// every artifact but a deletion is archived at <decision_id>/<path> with exactly that content (and
// the row's mode, when given), hashed here and compared with the manifest; a deletion has no
// archived_path and nothing archived; and the archive holds no other file.
func (s *scenario) theArchiveHoldsExactly(name string, table *godog.Table) error {
	id, ok := s.ids[name]
	if !ok {
		return fmt.Errorf("no correction remembered as %q", name)
	}
	dir, err := s.history("archive/" + id)
	if err != nil {
		return err
	}
	entries, err := readManifest(dir, id)
	if err != nil {
		return err
	}
	rows := tableRows(table)
	if err := requireColumns(rows, "decision_id", "path", "change", "content"); err != nil {
		return err
	}
	col := columns(rows[0])
	var problems []string
	if len(entries) != len(rows)-1 {
		problems = append(problems, fmt.Sprintf("the manifest lists %d artifacts, want %d", len(entries), len(rows)-1))
	}
	archived := map[string]bool{"manifest.json": true}
	for _, row := range rows[1:] {
		decision, path, change, content := row[col["decision_id"]], row[col["path"]], row[col["change"]], row[col["content"]]
		what := decision + "/" + path
		i := slices.IndexFunc(entries, func(e manifestEntry) bool { return e.decision == decision && e.fields["path"] == path })
		if i < 0 {
			problems = append(problems, "the manifest does not list "+what)
			continue
		}
		e := entries[i]
		if c, ok := col["attempt"]; ok && e.attempt.String() != row[c] {
			problems = append(problems, fmt.Sprintf("%s: attempt %s, want %s", what, e.attempt, row[c]))
		}
		if change == "added dir" { // an empty directory the decision created
			fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(what)))
			switch {
			case e.fields["change"] != "added" || e.fields["kind"] != "dir" || e.fields["archived_path"] != what:
				problems = append(problems, fmt.Sprintf("%s: manifest %v, want an added dir archived at %s", what, e.fields, what))
			case err != nil || !fi.IsDir():
				problems = append(problems, fmt.Sprintf("%s: not archived as a directory (%v)", what, err))
			}
			continue
		}
		want := map[string]string{"change": change, "size": strconv.Itoa(len(content)), "sha256": sum256([]byte(content))}
		for _, k := range []string{"change", "size", "sha256"} {
			if err := matchValue(e.fields[k], want[k]); err != nil {
				problems = append(problems, fmt.Sprintf("%s: manifest %s %v", what, k, err))
			}
		}
		ap, hasAP := e.fields["archived_path"]
		if change == "deleted" {
			if hasAP {
				problems = append(problems, fmt.Sprintf("%s: a deletion has archived_path %s", what, show(ap)))
			}
			if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(what))); err == nil {
				problems = append(problems, what+": a deletion has an archived file")
			}
			continue
		}
		if ap != what {
			problems = append(problems, fmt.Sprintf("%s: archived_path %s, want %q", what, show(ap), what))
			continue
		}
		archived[what] = true
		got, mode, err := archivedHash(filepath.Join(dir, filepath.FromSlash(what)))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", what, err))
			continue
		}
		if sum := sum256(got); sum != e.fields["sha256"] {
			problems = append(problems, fmt.Sprintf("%s: the archived content hashes to %s, the manifest says %v", what, sum, e.fields["sha256"]))
		}
		if string(got) != content {
			problems = append(problems, fmt.Sprintf("%s: archived %q, want %q", what, got, content))
		}
		if c, ok := col["mode"]; ok && row[c] != "" {
			m, err := parseMode(row[c])
			if err != nil {
				return err
			}
			if mode.Perm() != m {
				problems = append(problems, fmt.Sprintf("%s: archived with mode %04o, want %04o", what, mode.Perm(), m))
			}
		}
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if !archived[filepath.ToSlash(rel)] {
			problems = append(problems, "unexpected file in the archive: "+filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("the archive %s is not as expected:\n  %s", dir, strings.Join(problems, "\n  "))
	}
	return nil
}

func (s *scenario) isAnEmptyDirectory(rel string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s holds %s", rel, entryNames(entries))
	}
	return nil
}

func (s *scenario) holdsNoVisibleEntries(rel string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return strings.HasPrefix(e.Name(), ".") })
	if len(entries) > 0 {
		return fmt.Errorf("%s holds %s", rel, entryNames(entries))
	}
	return nil
}

func (s *scenario) holdsOnly(rel, name string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	if name, err = s.expand(name); err != nil {
		return err
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	if len(entries) != 1 || entries[0].Name() != name {
		return fmt.Errorf("%s holds %s, want only %s", rel, entryNames(entries), name)
	}
	return nil
}

func entryNames(entries []fs.DirEntry) string {
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, ", ")
}

func columns(header []string) map[string]int {
	m := make(map[string]int, len(header))
	for i, c := range header {
		m[c] = i
	}
	return m
}

func requireColumns(rows [][]string, names ...string) error {
	if len(rows) == 0 {
		return errors.New("the table needs a header row")
	}
	col := columns(rows[0])
	for _, n := range names {
		if _, ok := col[n]; !ok {
			return fmt.Errorf("the table needs a %q column (has %s)", n, strings.Join(rows[0], ", "))
		}
	}
	return nil
}

// lastCommand is the record of the last command, which steps that run helper commands put back.
type lastCommand struct {
	cmdline, stdout, stderr string
	exitCode                int
	elapsed                 time.Duration
	unchecked               bool
}

func (s *scenario) saveLast() lastCommand {
	return lastCommand{s.cmdline, s.stdout, s.stderr, s.exitCode, s.elapsed, s.unchecked}
}

func (s *scenario) restoreLast(l lastCommand) {
	s.cmdline, s.stdout, s.stderr, s.exitCode, s.elapsed, s.unchecked = l.cmdline, l.stdout, l.stderr, l.exitCode, l.elapsed, l.unchecked
}
