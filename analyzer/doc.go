// Package analyzer is driftback's projection: a pure function of
// (repository files, target root, live objects) to a Plan. It renders the
// root with the real kustomize library, computes per object what its source
// document should hold (source form), writes that into the user's bytes,
// re-renders to prove it, and refuses by name what cannot be placed safely.
// No network, no clock, no disk — except a private temporary folder for
// Flux's kustomization generator, which reads only from disk (gitops/flux.go).
// With a GitOps tool's context (Options.Flux, Options.ArgoCD) the root is
// rendered as that tool renders it (DESIGN §7).
//
// A plan is a pipeline of stages (Snapshot.plan, analyze.go), each taking
// the results of those before it, over two seams: a renderer builds the
// root as the GitOps tool does and says which input supplies each
// rendered value; a placer, which the renderer makes from that answer,
// writes the inputs. Kustomize is the one renderer (kustomizeRenderer,
// snapshot.go) and placer (kustomizePlacer, analyze.go); another tool's
// (Helm's values) is a second pair beside them, not a branch inside them.
// Only pairing is shared.
//
//   - kustomize (snapshot.go, orchestrator.go): Options to the renderer,
//     with the root kustomization as the GitOps tool rewrites it.
//   - render (snapshot.go): the root's kustomize render, a *built.
//   - pairObjects (pair.go): the rendered objects and the live objects
//     to a *pairing, each rendered object with the live values it should
//     hold.
//   - attribute (snapshot.go): the pairs to the placer, with the dye's
//     answer (runDye: who supplies each value).
//   - place (analyze.go): planWrites decides what is written other than a
//     source document: planRoutes (images:/replicas: entries, route.go),
//     planTool (the tool's settings and Flux variables, orchestrator.go,
//     fluxvars.go) and placeValues (patches, labels, generator literals,
//     place.go). Then:
//   - project (project.go, override.go, override_generated.go): the pairs
//     and *writes to a *projection, the candidates: source documents or
//     overrides rewritten.
//   - verify (verify.go, guard.go): the *projection to *verified, the
//     candidates left and the written files, proven by re-rendering the
//     edited tree. It cuts the projection back round by round.
//   - finish (plan.go): a finisher takes *verified and the writes to the
//     Plan's edits, notes and files.
//
// Projecting and verifying share the kustomizePlacer, the inputs and the
// results before them, and give up a field they cannot write through
// writes.takeBack, which cuts that field's writes out of routing's, the
// tool's and placing's results: the pipeline's one feedback edge. owner.go
// names who owns a field the plan cannot write. The sops package compares a
// SOPS-encrypted source as the GitOps tool applies it, decrypted, and
// keeps every write out of it (DESIGN §5.5).
// The engines live in sub-packages, each taking its input and returning
// its result: render (kustomize builds), dye (which input supplies each
// value), gitops (what Flux and Argo CD rewrite), sourceform and intent
// (source form), ktree (the kustomization tree).
//
// It imports those sub-packages and the base libraries in internal/
// (repofs, yamledit, jsonvalue, kube, smp, noise); never bot, cluster or
// config. The sub-packages never import it. The bot and the plan command
// reach it through Snapshot (snapshot.go: one per commit, with its render
// cache) or Analyze (one plan).
package analyzer
