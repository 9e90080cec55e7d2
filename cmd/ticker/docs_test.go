package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
)

// TestMain lets the test binary be the ticker command too: testscript
// puts a "ticker" on the scripts' PATH that runs tickerMain.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"ticker": tickerMain})
}

// nowVar names the environment variable that fixes the scripts' ticker's
// clock, so that what a command prints about now reads the same on every
// run. The real binary has no such thing: it is the test's, set by a
// "<!-- now … -->" line in the docs.
const nowVar = "TICKER_DOCS_NOW"

// tickerMain is the ticker binary's main, on a fake clock standing still
// at $TICKER_DOCS_NOW when that is set.
func tickerMain() {
	env := cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	if now := os.Getenv(nowVar); now != "" {
		t, err := time.Parse(time.RFC3339Nano, now)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s=%q: %v\n", nowVar, now, err)
			os.Exit(2)
		}
		env.Clock = clockwork.NewFakeClockAt(t)
	}
	os.Exit(cli.Main(context.Background(), os.Args[1:], env))
}

// docPages are the pages whose examples are checked, from this directory.
var docPages = []string{
	"../../README.md",
	"../../docs/cli.md",
	"../../docs/schedules.md",
	"../../docs/workflows.md",
	"../../docs/semantics.md",
	"../../docs/postgres.md",
	"../../docs/performance.md",
}

// TestDocsExamples runs every terminal session the docs show — each
// ```console block, a "$ ticker …" line and what it prints — against the
// ticker and fails when what it prints differs, so an example cannot
// drift from the binary. The rules, for whoever writes the docs:
//
//   - A ```console block is checked. Each "$ " line is a ticker command
//     line (a trailing "# comment" is dropped; "> /dev/null" leaves its
//     standard output unchecked); the lines after it, up to the next "$ ",
//     are its standard output followed by its standard error.
//   - "…" in a line matches anything within the line; a line that is only
//     "…" matches any number of lines. Trailing spaces and trailing blank
//     lines are not compared.
//   - "$ touch FILE" creates an empty file, as the shell's does.
//   - A command is expected to succeed, unless what it prints holds the
//     ticker's error line ("ticker <command>: …"): then it must fail.
//   - The blocks under one heading run in order in one new directory.
//   - "<!-- now 2026-11-23T17:29:10Z -->" before a block stops the
//     ticker's clock at that instant for the block's commands (and the
//     following blocks under the heading), so output about now is exact.
//   - A block showing "$ ticker" that cannot run here (a server that runs
//     until stopped, PostgreSQL, a signal) is fenced as anything but
//     console and preceded by "<!-- unchecked: why -->"; without that
//     line the test fails, so that no example is left unchecked by
//     mistake.
func TestDocsExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the ticker over every example of the docs")
	}
	dir := t.TempDir()
	var files []string
	for _, page := range docPages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		scripts, err := docScripts(filepath.Base(page), string(text))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range scripts {
			file := filepath.Join(dir, s.name+".txtar")
			if err := os.WriteFile(file, []byte(s.txtar), 0o600); err != nil {
				t.Fatal(err)
			}
			files = append(files, file)
		}
	}
	if len(files) == 0 {
		t.Fatal("no example found in the docs")
	}
	testscript.Run(t, testscript.Params{
		Files: files,
		Setup: func(e *testscript.Env) error {
			// The ticker's defaults must not come from the machine.
			e.Setenv("PASSAGE_DB", "")
			e.Setenv("TZ", "UTC")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"shows": shows, "touch": touch},
	})
}

// docScript is a testscript archive made of a page's section.
type docScript struct{ name, txtar string }

var (
	fence      = regexp.MustCompile("^( *)```(.*)$")
	heading    = regexp.MustCompile(`^#+ `)
	nowLine    = regexp.MustCompile(`^<!-- now (\S+) -->$`)
	unchecked  = regexp.MustCompile(`^<!-- unchecked: .+ -->$`)
	errorLine  = regexp.MustCompile(`^ticker( [a-z]+)?: `)
	slugUnsafe = regexp.MustCompile(`[^a-z0-9]+`)
)

// docScripts turns the console blocks of a page into testscript archives,
// one per heading that has any.
func docScripts(page, text string) ([]docScript, error) {
	var (
		scripts  []docScript
		script   strings.Builder
		files    strings.Builder
		section  string
		sectionN int
		wants    int
		now      string
	)
	flush := func() {
		if script.Len() > 0 {
			name := fmt.Sprintf("%s-%02d-%s", strings.TrimSuffix(page, ".md"), sectionN, strings.Trim(slugUnsafe.ReplaceAllString(strings.ToLower(section), "-"), "-"))
			scripts = append(scripts, docScript{name, script.String() + files.String()})
		}
		script.Reset()
		files.Reset()
		now, wants = "", 0
	}
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if heading.MatchString(line) {
			flush()
			section = strings.TrimLeft(line, "# ")
			sectionN++
			continue
		}
		m := fence.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent, info := m[1], strings.TrimSpace(m[2])
		var directives []string
		for j := i - 1; j >= 0 && strings.HasPrefix(strings.TrimSpace(lines[j]), "<!--"); j-- {
			directives = append(directives, strings.TrimSpace(lines[j]))
		}
		start := i
		var block []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			block = append(block, strings.TrimPrefix(lines[i], indent))
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s:%d: the code block never ends", page, start+1)
		}
		where := fmt.Sprintf("%s:%d", page, start+1)
		isUnchecked := false
		for _, d := range directives {
			if n := nowLine.FindStringSubmatch(d); n != nil {
				if _, err := time.Parse(time.RFC3339Nano, n[1]); err != nil {
					return nil, fmt.Errorf("%s: %s: %v", where, d, err)
				}
				now = n[1]
			}
			isUnchecked = isUnchecked || unchecked.MatchString(d)
		}
		if info != "console" {
			for _, b := range block {
				if strings.HasPrefix(b, "$ ticker") && !isUnchecked {
					return nil, fmt.Errorf("%s: a block showing %q is not a ```console block, so it is not checked: make it one, or say why it cannot be with <!-- unchecked: why --> above it", where, b)
				}
			}
			continue
		}
		if len(block) == 0 || !strings.HasPrefix(block[0], "$ ") {
			return nil, fmt.Errorf("%s: a console block begins with a \"$ \" command line", where)
		}
		fmt.Fprintf(&script, "# %s\n", where)
		if now != "" {
			fmt.Fprintf(&script, "env %s=%s\n", nowVar, now)
		}
		for k := 0; k < len(block); {
			cmdLine := strings.TrimPrefix(block[k], "$ ")
			at := fmt.Sprintf("%s:%d", page, start+2+k)
			var out []string
			for k++; k < len(block) && !strings.HasPrefix(block[k], "$ "); k++ {
				out = append(out, block[k])
			}
			for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
				out = out[:len(out)-1]
			}
			args, quiet, err := shellWords(cmdLine)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", at, err)
			}
			if len(args) == 2 && args[0] == "touch" && len(out) == 0 {
				fmt.Fprintf(&script, "touch '%s'\n", strings.ReplaceAll(args[1], "'", "''"))
				continue
			}
			if len(args) == 0 || args[0] != "ticker" {
				return nil, fmt.Errorf("%s: %q: a checked example runs the ticker (or touch FILE) and nothing else", at, cmdLine)
			}
			exec := "exec"
			for _, o := range out {
				if errorLine.MatchString(o) {
					exec = "! exec"
				}
			}
			quoted := make([]string, len(args))
			for a, arg := range args {
				quoted[a] = "'" + strings.ReplaceAll(arg, "'", "''") + "'"
			}
			wants++
			want := fmt.Sprintf("want/%d", wants)
			fmt.Fprintf(&script, "%s %s\nshows %s %s %t\n", exec, strings.Join(quoted, " "), want, strconv.Quote(at), quiet)
			fmt.Fprintf(&files, "-- %s --\n", want)
			for _, o := range out {
				fmt.Fprintln(&files, o)
			}
		}
	}
	flush()
	return scripts, nil
}

// shellWords splits a command line as a POSIX shell would for the simple
// forms the docs use: words, '…' and "…" quoting, a "# comment" at the
// end, and "> /dev/null", which it reports as quiet.
func shellWords(line string) (words []string, quiet bool, err error) {
	var word strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, word.String())
		}
		word.Reset()
		inWord = false
	}
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			end()
		case c == '#' && !inWord:
			i = len(line)
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, false, fmt.Errorf("%q: unterminated '", line)
			}
			word.WriteString(line[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					i++
				}
				word.WriteByte(line[i])
			}
			if i == len(line) {
				return nil, false, fmt.Errorf("%q: unterminated \"", line)
			}
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	end()
	if n := len(words); n >= 2 && words[n-2] == ">" && words[n-1] == "/dev/null" {
		return words[:n-2], true, nil
	}
	if n := len(words); n >= 1 && words[n-1] == ">/dev/null" {
		return words[:n-1], true, nil
	}
	return words, false, nil
}

// shows compares what the last command printed — its standard output
// (unless quiet) then its standard error — with the archive's file want,
// the output the docs show at the place named by where.
func shows(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: shows WANTFILE WHERE QUIET")
	}
	want, where := ts.ReadFile(args[0]), args[1]
	got := ts.ReadFile("stderr")
	if args[2] != "true" {
		got = ts.ReadFile("stdout") + got
	}
	if !matchShown(want, got) {
		ts.Fatalf("%s: the docs show\n%s\nand the ticker printed\n%s", where, want, got)
	}
}

// matchShown reports whether got is the output want shows, "…" matching
// anything within a line and a line of "…" any lines; trailing spaces and
// trailing blank lines are not compared.
func matchShown(want, got string) bool {
	var re strings.Builder
	re.WriteString(`\A`)
	for _, line := range trimLines(want) {
		if line == "…" {
			re.WriteString(`(?:[^\n]*\n)*?`)
			continue
		}
		for i, part := range strings.Split(line, "…") {
			if i > 0 {
				re.WriteString(`[^\n]*`)
			}
			re.WriteString(regexp.QuoteMeta(part))
		}
		re.WriteString(`\n`)
	}
	re.WriteString(`\z`)
	var normal strings.Builder
	for _, line := range trimLines(got) {
		normal.WriteString(line + "\n")
	}
	return regexp.MustCompile(re.String()).MatchString(normal.String())
}

// trimLines splits text into lines without their trailing spaces, the
// trailing blank lines left out.
func trimLines(text string) []string {
	lines := strings.Split(text, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " \t")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// touch creates an empty file, as the shell's touch does for a new one.
func touch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: touch FILE")
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), nil, 0o600))
}
