// dgsp-deploy-check: offline checks of deploy/ that need Go libraries, run by
// scripts/validate-deploy.sh.
//
//	dgsp-deploy-check compose FILE...   load a compose file the way `docker compose config`
//	                                    does (compose-go: schema, interpolation, references)
//	dgsp-deploy-check dockerfile FILE   parse a Dockerfile with BuildKit's own parser and
//	                                    run its instruction-level lint rules
//	dgsp-deploy-check kustomize DIR     build a kustomization (what `kubectl apply -k` sends)
//	                                    and print it as YAML
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: dgsp-deploy-check compose|dockerfile|kustomize FILE...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "compose":
		err = checkCompose(os.Args[2:])
	case "dockerfile":
		err = checkDockerfile(os.Args[2])
	case "kustomize":
		err = buildKustomization(os.Args[2])
	default:
		err = fmt.Errorf("unknown check %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func checkCompose(files []string) error {
	opts, err := cli.NewProjectOptions(files,
		cli.WithName("dgsp"),
		cli.WithOsEnv,
		cli.WithInterpolation(true),
		cli.WithResolvedPaths(true),
		cli.WithProfiles([]string{"*"}),
	)
	if err != nil {
		return err
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		return err
	}
	var names []string
	for name, s := range project.Services {
		ports := []string{}
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s:%s->%d", p.HostIP, p.Published, p.Target))
		}
		names = append(names, fmt.Sprintf("%s (image %s, networks %v, ports %v)", name, s.Image, keys(s.Networks), ports))
	}
	sort.Strings(names)
	fmt.Printf("compose project %q: %d services\n  %s\n", project.Name, len(names), strings.Join(names, "\n  "))
	return nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func checkDockerfile(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		return err
	}
	var problems []string
	for _, w := range res.Warnings {
		problems = append(problems, fmt.Sprintf("line %d: %s", w.Location.Start.Line, w.Short))
	}
	lint := linter.New(&linter.Config{
		Warn: func(rule, description, url, msg string, location []parser.Range) {
			line := 0
			if len(location) > 0 {
				line = location[0].Start.Line
			}
			problems = append(problems, fmt.Sprintf("line %d: %s: %s", line, rule, msg))
		},
	})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s:\n  %s", file, strings.Join(problems, "\n  "))
	}
	for _, s := range stages {
		fmt.Printf("stage %q from %s: %d instructions\n", s.Name, s.BaseName, len(s.Commands))
	}
	return nil
}

func buildKustomization(dir string) error {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return err
	}
	out, err := m.AsYaml()
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}
