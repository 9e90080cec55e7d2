package workflowcheck

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// orchestrationPath is the import path of the package whose Context marks a
// function as a workflow.
const orchestrationPath = "github.com/passage-of-time/passage/orchestration"

// Analyzer reports non-deterministic code inside workflow functions: see the
// package documentation for the list and the reasons.
var Analyzer = &analysis.Analyzer{
	Name: "workflowcheck",
	Doc: "report non-deterministic code in orchestration workflow functions\n\n" +
		"A workflow function (first parameter orchestration.Context) is replayed " +
		"from its history, so it must not read the clock (time.Now, time.Sleep, " +
		"timers), draw random numbers (math/rand), start goroutines, select on " +
		"channels or range over maps. The function given to orchestration.Step " +
		"or orchestration.Compensate is exempt.",
	URL: "https://pkg.go.dev/github.com/passage-of-time/passage/orchestration/workflowcheck",
	Run: run,
}

func run(pass *analysis.Pass) (any, error) {
	if pass.Pkg.Path() == orchestrationPath {
		// The engine's own functions take a Context first but are not
		// workflows: they are what makes workflows deterministic.
		return nil, nil
	}
	c := &checker{pass: pass}
	for _, file := range pass.Files {
		c.walk(file, false)
	}
	return nil, nil
}

// checker walks a file, knowing at each node whether it is workflow code.
type checker struct {
	pass *analysis.Pass
}

// walk visits n and its children; inWorkflow says whether n is workflow code.
// Entering a workflow function switches the check on; the body given to Step
// or Compensate switches it off; any other function literal inherits it, as a
// closure inside a workflow runs as part of the workflow.
func (c *checker) walk(n ast.Node, inWorkflow bool) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Body != nil {
				c.walk(n.Body, c.isWorkflow(n.Type))
			}
			return false
		case *ast.FuncLit:
			c.walk(n.Body, inWorkflow || c.isWorkflow(n.Type))
			return false
		case *ast.CallExpr:
			if inWorkflow && c.isActivityCall(n) {
				c.walk(n.Fun, true)
				for i, arg := range n.Args {
					c.walk(arg, i != activityArg)
				}
				return false
			}
		}
		if inWorkflow {
			return c.check(n)
		}
		return true
	})
}

// check reports n if it is forbidden in workflow code, and says whether to
// look inside it.
func (c *checker) check(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.GoStmt:
		c.pass.ReportRangef(n, "go statement in workflow code: goroutines are not replayed; do concurrent work in a Step")
	case *ast.SelectStmt:
		c.pass.ReportRangef(n, "select statement in workflow code: channel timing is not replayed; wait with ctx.Sleep or orchestration.Await")
	case *ast.RangeStmt:
		c.checkRange(n)
	case *ast.SelectorExpr:
		if fn := c.funcOf(n.Sel); fn != nil {
			if msg, ok := forbidden(fn); ok {
				c.pass.ReportRangef(n, "%s", msg)
				return false
			}
		}
	case *ast.Ident:
		// A bare identifier: a dot import, or a package's own name.
		if fn := c.funcOf(n); fn != nil {
			if msg, ok := forbidden(fn); ok {
				c.pass.ReportRangef(n, "%s", msg)
			}
		}
	}
	return true
}

// checkRange reports a range over a map, or over one of the maps package's
// iterators, which visit the map in its random order.
func (c *checker) checkRange(n *ast.RangeStmt) {
	t := c.pass.TypesInfo.TypeOf(n.X)
	if t == nil {
		return
	}
	if _, ok := t.Underlying().(*types.Map); ok {
		c.pass.ReportRangef(n.X, "range over map in workflow code: iteration order is random; range over the sorted keys instead")
		return
	}
	if call, ok := ast.Unparen(n.X).(*ast.CallExpr); ok {
		if fn := c.calleeFunc(call); fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "maps" {
			switch fn.Name() {
			case "All", "Keys", "Values":
				c.pass.ReportRangef(n.X, "range over maps.%s in workflow code: iteration order is random; range over slices.Sorted(maps.Keys(m)) instead", fn.Name())
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

// calleeFunc returns the function or method that call calls by name, seeing
// through parentheses and explicit instantiation (Step[int](...)), or nil.
func (c *checker) calleeFunc(call *ast.CallExpr) *types.Func {
	fun := ast.Unparen(call.Fun)
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = ast.Unparen(f.X)
	case *ast.IndexListExpr:
		fun = ast.Unparen(f.X)
	}
	switch f := fun.(type) {
	case *ast.Ident:
		return c.funcOf(f)
	case *ast.SelectorExpr:
		return c.funcOf(f.Sel)
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
