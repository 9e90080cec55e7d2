package workflowcheck

import (
	"go/ast"
	"go/constant"
	"go/token"
)

// Patches: calls of orchestration.Patched and DeprecatePatch are checked
// in every function of a package that sees the orchestration package,
// since a marker is matched by its id, at the place it was recorded, on
// every replay of every later deploy.

// patchScope holds the patch ids asked in one workflow function, with
// where each was first asked. A closure inside a workflow shares it;
// another workflow, declared or literal, has its own.
type patchScope map[string]token.Pos

// checkPatches reports, in the package's files: a patch id that is not a
// constant string, or is empty; an id asked at two places of one
// workflow function; Patched whose answer is dropped; and either call in
// the body of a Step or Compensate, which runs once and is never replayed.
func (c *checker) checkPatches() {
	for _, file := range c.pass.Files {
		c.walkPatches(file, nil, false)
	}
}

// walkPatches visits n with the scope of the function it is in (nil
// outside functions) and whether it is inside a step's body.
func (c *checker) walkPatches(n ast.Node, scope patchScope, inStep bool) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Body != nil {
				c.walkPatches(n.Body, patchScope{}, false)
			}
			return false
		case *ast.FuncLit:
			if scope == nil || c.isWorkflow(n.Type) {
				c.walkPatches(n.Body, patchScope{}, false)
			} else {
				c.walkPatches(n.Body, scope, inStep)
			}
			return false
		case *ast.CallExpr:
			if c.isActivityCall(n) {
				c.walkPatches(n.Fun, scope, inStep)
				for i, arg := range n.Args {
					c.walkPatches(arg, scope, inStep || i == activityArg)
				}
				return false
			}
			if name := c.patchFunc(n); name != "" {
				c.checkPatch(n, name, scope, inStep)
			}
		case *ast.ExprStmt:
			c.checkDropped(n.X)
		case *ast.AssignStmt:
			if len(n.Rhs) == 1 && allBlank(n.Lhs) {
				c.checkDropped(n.Rhs[0])
			}
		}
		return true
	})
}

// patchFunc returns "Patched" or "DeprecatePatch" when call calls that
// function of the orchestration package, and "" otherwise.
func (c *checker) patchFunc(call *ast.CallExpr) string {
	fn := c.calleeFunc(call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != orchestrationPath || fn.Signature().Recv() != nil {
		return ""
	}
	if name := fn.Name(); name == "Patched" || name == "DeprecatePatch" {
		return name
	}
	return ""
}

// checkPatch reports what is wrong with a call of orchestration.name.
func (c *checker) checkPatch(call *ast.CallExpr, name string, scope patchScope, inStep bool) {
	if inStep {
		c.pass.ReportRangef(call, "orchestration.%s in the body of a Step or Compensate: the body runs once and is not replayed, so its marker would stand where no replay asks for it; ask it in the workflow", name)
	}
	if len(call.Args) < 2 {
		return
	}
	arg := call.Args[1]
	tv, ok := c.pass.TypesInfo.Types[arg]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		c.pass.ReportRangef(arg, "patch id of orchestration.%s is not a constant string: its marker is matched by the id on every replay, under every later deploy; use a string constant", name)
		return
	}
	id := constant.StringVal(tv.Value)
	if id == "" {
		c.pass.ReportRangef(arg, "empty patch id: orchestration.%s leaves the instance stuck; name the change", name)
		return
	}
	if scope == nil || inStep {
		return
	}
	if first, ok := scope[id]; ok {
		c.pass.ReportRangef(arg, "patch id %q is asked again in this workflow (first at line %d): an id names one change at one place, where its marker stands; give this change its own id", id, c.pass.Fset.Position(first).Line)
		return
	}
	scope[id] = call.Pos()
}

// checkDropped reports a call of Patched whose answer e is not used: the
// marker is recorded, but no branch depends on it.
func (c *checker) checkDropped(e ast.Expr) {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || c.patchFunc(call) != "Patched" {
		return
	}
	c.pass.ReportRangef(call, "the answer of orchestration.Patched is not used: branch on it (new code if true, the old if false), or call orchestration.DeprecatePatch once the old branch is gone")
}

// allBlank says whether every expression of lhs is the blank identifier.
func allBlank(lhs []ast.Expr) bool {
	for _, e := range lhs {
		if id, ok := e.(*ast.Ident); !ok || id.Name != "_" {
			return false
		}
	}
	return true
}
