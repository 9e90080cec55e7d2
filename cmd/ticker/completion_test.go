package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/require"
)

// completionScript sources "ticker completion bash" in bash and completes
// words as bash does on TAB: COMP_WORDS and COMP_CWORD set, the script's
// function called, COMPREPLY printed a line each. The script asks the
// ticker on the PATH (this test binary, TestMain) through cobra's
// "__complete" protocol. _get_comp_words_by_ref, which the
// bash-completion package would define, is defined here as that package
// does for these plain words.
const completionScript = `
exec ticker completion bash
cp stdout ticker.bash

env WORDS='ticker sch'
exec bash -c $COMPLETE
stdout '^schedule$'
! stdout 'status|serve'

exec ticker schedule add --db s.db --name nightly --spec '0 2 * * *' --command report
exec ticker schedule add --db s.db --name noon --spec '0 12 * * *' --command report
exec ticker schedule add --db s.db --name hourly --spec '@hourly' --command report
env WORDS='ticker schedule pause --db s.db n'
exec bash -c $COMPLETE
cmp stdout want-n.txt

env WORDS='ticker help schedule ad'
exec bash -c $COMPLETE
stdout '^add$'

-- want-n.txt --
nightly
noon
`

// complete is the bash that completes $WORDS, the last word being the one
// under the cursor.
const complete = `
_get_comp_words_by_ref() {
	cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}
	words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
}
compopt() { :; }
source ./ticker.bash
read -r -a COMP_WORDS <<< "$WORDS"
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE=$WORDS
COMP_POINT=${#COMP_LINE}
__start_ticker
printf '%s\n' "${COMPREPLY[@]}"
`

// "ticker completion bash" sourced in bash completes "ticker sch" to
// "schedule", and a schedule's name from the database --db names.
func TestBashCompletesCommandsAndScheduleNames(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "complete.txtar"), []byte(completionScript), 0o644))
	testscript.Run(t, testscript.Params{
		Dir: dir,
		Setup: func(e *testscript.Env) error {
			e.Setenv("COMPLETE", complete)
			return nil
		},
	})
}
