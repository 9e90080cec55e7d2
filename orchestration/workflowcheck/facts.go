package workflowcheck

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// nondeterministic is the fact of a function that does something workflow
// code must not do, in its own body or in a function it calls. A workflow
// that calls the function is reported at the call.
type nondeterministic struct {
	// Chain leads from the first function the fact's function calls down
	// to what is forbidden: ["helpers.inner", "time.Now"] for a function
	// that calls inner, which calls time.Now; ["time.Now"] for one that
	// calls time.Now itself.
	Chain []string
	// Advice says what to do instead of the last link of the chain.
	Advice string
}

// AFact marks nondeterministic as an analysis fact.
func (*nondeterministic) AFact() {}

// String is the chain and the advice, as the diagnostics show them.
func (f *nondeterministic) String() string {
	return strings.Join(f.Chain, " → ") + ": " + f.Advice
}

// direct is the fact of a function that breaks a rule in its own body.
func direct(f finding) *nondeterministic {
	return &nondeterministic{Chain: []string{f.what}, Advice: f.advice}
}

// through is the fact of a function that calls callee, whose fact is f.
func through(callee *types.Func, f *nondeterministic) *nondeterministic {
	chain := append([]string{displayName(callee)}, f.Chain...)
	return &nondeterministic{Chain: chain, Advice: f.Advice}
}

// displayName names fn as a diagnostic does, qualified by its package's
// name: pkg.F, pkg.T.M, or (*pkg.T).M.
func displayName(fn *types.Func) string {
	recv := fn.Signature().Recv()
	if recv == nil {
		return fn.Pkg().Name() + "." + fn.Name()
	}
	byName := func(p *types.Package) string { return p.Name() }
	if _, ok := recv.Type().(*types.Pointer); ok {
		return "(" + types.TypeString(recv.Type(), byName) + ")." + fn.Name()
	}
	return types.TypeString(recv.Type(), byName) + "." + fn.Name()
}

// followed says whether other packages follow calls into the package pass
// analyses: whether its functions' facts are exported. The standard library
// is not followed: log.Printf reads the clock and fmt.Println may block on
// a pipe, but a workflow calling them is no more wrong than the standard
// library's own time.Now, which the rules name where it matters. Under go
// vet a package of a module has a module path and the standard library has
// none; other drivers may leave the module empty, so a path whose first
// element has a dot (example.com/…) counts too, as the standard library's
// never do.
func followed(pass *analysis.Pass) bool {
	if m := pass.Module; m != nil && m.Path != "" && m.Path != "std" {
		return true
	}
	first, _, _ := strings.Cut(pass.Pkg.Path(), "/")
	return strings.Contains(first, ".")
}

// seesOrchestration says whether pkg imports the orchestration package,
// directly or through other packages: without it, it can hold no workflow.
func seesOrchestration(pkg *types.Package) bool {
	seen := make(map[*types.Package]bool)
	var visit func(*types.Package) bool
	visit = func(p *types.Package) bool {
		if p.Path() == orchestrationPath {
			return true
		}
		if seen[p] {
			return false
		}
		seen[p] = true
		for _, imp := range p.Imports() {
			if visit(imp) {
				return true
			}
		}
		return false
	}
	return visit(pkg)
}

// body is what the walk of a function that is not a workflow met, as if it
// were workflow code: the findings and references, in source order.
type body struct {
	fn     *types.Func
	events []event
}

// summarize computes the fact of every function and method declared in the
// package that is not a workflow, and exports them if other packages follow
// calls into this one. A workflow's own code is reported where it is, so a
// workflow has no fact.
//
// A function's fact comes from the first rule it breaks itself or the first
// call it makes to another package's function with a fact; failing both,
// from the first call to a function of its own package with a fact, found in
// rounds: round n gives facts to the functions n calls away from a broken
// rule, so each chain is one of the shortest, and recursion ends when a
// round adds nothing.
func (c *checker) summarize() {
	bodies := c.bodies()
	for _, b := range bodies {
		for _, e := range b.events {
			if e.callee != nil && e.callee.Pkg() == c.pass.Pkg {
				continue
			}
			if f := c.factOf(e); f != nil {
				c.facts[b.fn] = f
				break
			}
		}
	}
	for {
		found := make(map[*types.Func]*nondeterministic)
		for _, b := range bodies {
			if c.facts[b.fn] != nil {
				continue
			}
			for _, e := range b.events {
				if f := c.factOf(e); f != nil {
					found[b.fn] = f
					break
				}
			}
		}
		if len(found) == 0 {
			break
		}
		for fn, f := range found {
			c.facts[fn] = f
		}
	}
	if followed(c.pass) {
		for _, b := range bodies {
			if f := c.facts[b.fn]; f != nil {
				c.pass.ExportObjectFact(b.fn, f)
			}
		}
	}
}

// bodies walks every function and method declared in the package that is
// not a workflow, as workflow code.
func (c *checker) bodies() []body {
	var bodies []body
	for _, file := range c.pass.Files {
		for _, decl := range file.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil || c.isWorkflow(fd.Type) {
				continue
			}
			fn, ok := c.pass.TypesInfo.Defs[fd.Name].(*types.Func)
			if !ok {
				continue
			}
			b := body{fn: fn}
			w := c.newWalker(func(e event) { b.events = append(b.events, e) })
			// A workflow literal inside is checked on its own: counting it
			// here too would report its code again at each call.
			w.skipWorkflowLits = true
			w.walk(fd.Body, true)
			bodies = append(bodies, b)
		}
	}
	return bodies
}

// factOf returns the fact that event e gives the function it is in: the
// rule it breaks, or the fact of the function it refers to, or nil. A
// function of this package has the fact summarize found so far.
func (c *checker) factOf(e event) *nondeterministic {
	if e.callee == nil {
		return direct(e.found)
	}
	fn := e.callee.Origin()
	if fn.Pkg() == c.pass.Pkg {
		if f := c.facts[fn]; f != nil {
			return through(fn, f)
		}
		return nil
	}
	var f nondeterministic
	if fn.Pkg() != nil && c.pass.ImportObjectFact(fn, &f) {
		return through(fn, &f)
	}
	return nil
}
