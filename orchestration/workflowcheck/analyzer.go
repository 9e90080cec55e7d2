package workflowcheck

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// orchestrationPath is the import path of the package whose Context marks a
// function as a workflow.
const orchestrationPath = "github.com/passage-of-time/passage/orchestration"

// Analyzer reports non-deterministic code inside workflow functions, and
// calls from them to functions that do such things: see the package
// documentation for the list and the reasons.
var Analyzer = &analysis.Analyzer{
	Name: "workflowcheck",
	Doc: "report non-deterministic code in orchestration workflow functions\n\n" +
		"A workflow function (first parameter orchestration.Context) is replayed " +
		"from its history, so it must not read the clock (time.Now, time.Sleep, " +
		"timers), draw random numbers (math/rand), start goroutines (go, " +
		"sync.WaitGroup.Go), select on, receive from or send on channels, or " +
		"range over maps, nor call a function that does, in this module or " +
		"another outside the standard library. The function given to " +
		"orchestration.Step or orchestration.Compensate is exempt.\n\n" +
		"It also checks orchestration.Patched and DeprecatePatch: the patch id " +
		"must be a non-empty constant string asked at one place of a workflow, " +
		"Patched's answer must be used, and neither may be called in the body " +
		"of a Step or Compensate.",
	URL:       "https://pkg.go.dev/github.com/passage-of-time/passage/orchestration/workflowcheck",
	Run:       run,
	FactTypes: []analysis.Fact{new(nondeterministic)},
}

func run(pass *analysis.Pass) (any, error) {
	if pass.Pkg.Path() == orchestrationPath {
		// The engine's own functions take a Context first but are not
		// workflows, and what they do is what makes workflows
		// deterministic: they get no facts either.
		return nil, nil
	}
	holdsWorkflows := seesOrchestration(pass.Pkg)
	if !holdsWorkflows && !followed(pass) {
		// Nothing to report, and no package reads the facts: this skips
		// the standard library under go vet.
		return nil, nil
	}
	c := &checker{pass: pass, facts: make(map[*types.Func]*nondeterministic)}
	c.summarize()
	if holdsWorkflows {
		w := c.newWalker(c.report)
		for _, file := range pass.Files {
			w.walk(file, false)
		}
		c.checkPatches()
	}
	return nil, nil
}

// checker holds what the analysis of one package knows.
type checker struct {
	pass *analysis.Pass
	// facts holds the facts of the package's own functions, exported or
	// not.
	facts map[*types.Func]*nondeterministic
}

// An event is what a walk meets in workflow code: a rule broken, or a
// reference to a function, which may have a fact.
type event struct {
	at     ast.Node
	found  finding     // the rule broken, when callee is nil
	callee *types.Func // the function referred to
	called bool        // whether callee is called, not taken as a value
}

// report reports e if it breaks a rule or refers to a function with a fact.
func (c *checker) report(e event) {
	if e.callee == nil {
		c.pass.ReportRangef(e.at, "%s in workflow code: %s", e.found.what, e.found.advice)
		return
	}
	f := c.factOf(e)
	if f == nil {
		return
	}
	use := "call to %s in workflow code: %s"
	if !e.called {
		use = "%s taken as a value in workflow code: %s"
	}
	c.pass.ReportRangef(e.at, use, f.Chain[0], f)
}

// walker walks code, knowing at each node whether it is workflow code, and
// hands what it meets in workflow code to emit.
type walker struct {
	c    *checker
	emit func(event)
	// skipWorkflowLits says not to enter function literals that are
	// workflows.
	skipWorkflowLits bool
	// called holds the function expressions of the calls met so far, to
	// tell a call from a function taken as a value.
	called map[ast.Expr]bool
}

// newWalker returns a walker that hands what it meets to emit.
func (c *checker) newWalker(emit func(event)) *walker {
	return &walker{c: c, emit: emit, called: make(map[ast.Expr]bool)}
}

// walk visits n and its children; inWorkflow says whether n is workflow code.
// Entering a workflow function switches the check on; the body given to Step
// or Compensate switches it off; any other function literal inherits it, as a
// closure inside a workflow runs as part of the workflow.
func (w *walker) walk(n ast.Node, inWorkflow bool) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Body != nil {
				w.walk(n.Body, w.c.isWorkflow(n.Type))
			}
			return false
		case *ast.FuncLit:
			isWorkflow := w.c.isWorkflow(n.Type)
			if !(isWorkflow && w.skipWorkflowLits) {
				w.walk(n.Body, inWorkflow || isWorkflow)
			}
			return false
		case *ast.CallExpr:
			if inWorkflow && w.c.isActivityCall(n) {
				w.walk(n.Fun, true)
				for i, arg := range n.Args {
					w.walk(arg, i != activityArg)
				}
				return false
			}
		}
		if inWorkflow {
			return w.check(n)
		}
		return true
	})
}

// check hands n to emit if it is forbidden in workflow code or refers to a
// function, and says whether to look inside it.
func (w *walker) check(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.GoStmt:
		w.found(n, goStmt)
	case *ast.SelectStmt:
		w.found(n, selectStmt)
		w.walkSelect(n)
		return false
	case *ast.UnaryExpr:
		if n.Op == token.ARROW {
			w.found(n, receive)
		}
	case *ast.SendStmt:
		w.found(n, send)
	case *ast.RangeStmt:
		w.checkRange(n)
	case *ast.CallExpr:
		if fun := calleeExpr(n); fun != nil {
			w.called[fun] = true
		}
	case *ast.SelectorExpr:
		if fn := w.c.funcOf(n.Sel); fn != nil {
			w.use(n, fn)
			w.walk(n.X, true)
			return false
		}
	case *ast.Ident:
		// A bare identifier: a dot import, or a package's own function.
		if fn := w.c.funcOf(n); fn != nil {
			w.use(n, fn)
		}
	}
	return true
}

// found hands emit the rule n breaks.
func (w *walker) found(n ast.Node, f finding) {
	w.emit(event{at: n, found: f})
}

// use hands emit the reference expr makes to fn: a rule broken if fn is
// forbidden, a reference to follow otherwise.
func (w *walker) use(expr ast.Expr, fn *types.Func) {
	if f, ok := forbidden(fn); ok {
		w.found(expr, f)
		return
	}
	w.emit(event{at: expr, callee: fn, called: w.called[expr]})
}

// walkSelect walks the clauses of a select statement, which is reported
// whole: the receives and sends of its cases are not reported again, but
// their operands and the case bodies are workflow code.
func (w *walker) walkSelect(n *ast.SelectStmt) {
	for _, stmt := range n.Body.List {
		clause := stmt.(*ast.CommClause)
		switch comm := clause.Comm.(type) {
		case *ast.ExprStmt:
			w.walk(receiveOperand(comm.X), true)
		case *ast.AssignStmt:
			for _, lhs := range comm.Lhs {
				w.walk(lhs, true)
			}
			w.walk(receiveOperand(comm.Rhs[0]), true)
		case *ast.SendStmt:
			w.walk(comm.Chan, true)
			w.walk(comm.Value, true)
		}
		for _, s := range clause.Body {
			w.walk(s, true)
		}
	}
}

// receiveOperand returns the channel that e receives from, or e if it is
// not a receive.
func receiveOperand(e ast.Expr) ast.Expr {
	if u, ok := ast.Unparen(e).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
		return u.X
	}
	return e
}

// checkRange hands emit a range over a map or a channel, or over one of the
// maps package's iterators, which visit the map in its random order.
func (w *walker) checkRange(n *ast.RangeStmt) {
	t := w.c.pass.TypesInfo.TypeOf(n.X)
	if t == nil {
		return
	}
	switch t.Underlying().(type) {
	case *types.Map:
		w.found(n.X, rangeOverMap)
		return
	case *types.Chan:
		w.found(n.X, rangeOverChan)
		return
	}
	if call, ok := ast.Unparen(n.X).(*ast.CallExpr); ok {
		if fn := w.c.calleeFunc(call); fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "maps" {
			switch fn.Name() {
			case "All", "Keys", "Values":
				w.found(n.X, finding{"range over maps." + fn.Name(), useSortKeys})
			}
		}
	}
}

// activityArg is the index of the argument of Step and Compensate that holds
// the function run outside the workflow.
const activityArg = 2

// isActivityCall says whether call calls orchestration.Step or
// orchestration.Compensate, whose third argument is not workflow code.
func (c *checker) isActivityCall(call *ast.CallExpr) bool {
	fn := c.calleeFunc(call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != orchestrationPath {
		return false
	}
	if sig, ok := fn.Type().(*types.Signature); !ok || sig.Recv() != nil {
		return false
	}
	return fn.Name() == "Step" || fn.Name() == "Compensate"
}

// calleeFunc returns the function or method that call calls by name, or
// nil.
func (c *checker) calleeFunc(call *ast.CallExpr) *types.Func {
	switch f := calleeExpr(call).(type) {
	case *ast.Ident:
		return c.funcOf(f)
	case *ast.SelectorExpr:
		return c.funcOf(f.Sel)
	}
	return nil
}

// calleeExpr returns the name that call calls, an identifier or a selector,
// seeing through parentheses and explicit instantiation (Step[int](...)), or
// nil.
func calleeExpr(call *ast.CallExpr) ast.Expr {
	fun := ast.Unparen(call.Fun)
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = ast.Unparen(f.X)
	case *ast.IndexListExpr:
		fun = ast.Unparen(f.X)
	}
	switch fun.(type) {
	case *ast.Ident, *ast.SelectorExpr:
		return fun
	}
	return nil
}

// funcOf returns the function or method id refers to, or nil.
func (c *checker) funcOf(id *ast.Ident) *types.Func {
	fn, _ := c.pass.TypesInfo.Uses[id].(*types.Func)
	return fn
}

// isWorkflow says whether a function of type ft is a workflow function: its
// first parameter has type orchestration.Context.
func (c *checker) isWorkflow(ft *ast.FuncType) bool {
	if ft.Params == nil || len(ft.Params.List) == 0 {
		return false
	}
	t := c.pass.TypesInfo.TypeOf(ft.Params.List[0].Type)
	if t == nil {
		return false
	}
	named, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return false
	}
	obj := named.Obj()
	return obj.Name() == "Context" && obj.Pkg() != nil && obj.Pkg().Path() == orchestrationPath
}
