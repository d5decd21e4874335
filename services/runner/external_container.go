package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/services/runner/agentproxy"
)

// FeatureAgentNetwork names, in run.claimed's containment record of an
// attempt with an external agent, what the agent's network reaches: its
// commands' network_isolation does not hold for it (docs/agents.md).
const FeatureAgentNetwork = "agent_network"

// Details of FeatureAgentNetwork.
const (
	agentNetworkContainer = "the agent runs in the attempt's container and reaches its endpoint alone: a listener on 127.0.0.1 in the container's own network namespace, whose loopback is up while the agent runs; besides it, only what processes in the container serve on that loopback; nothing outside the container"
	agentNetworkHost      = "the agent keeps the host's network namespace, to reach its endpoint on the host's 127.0.0.1: it is told only that endpoint, and may reach whatever the host reaches"
)

// agentEndpoint starts the attempt's model endpoint: in the container's
// own network namespace when the agent runs in a container (reachable
// from there alone), else on the host's 127.0.0.1.
func (a *attempt) agentEndpoint(ctx context.Context, call agentproxy.Call) (*agentproxy.Server, error) {
	log := a.svc.log.With("suite", a.suite, "run", a.run)
	if !a.env.Sandbox.Container() {
		return agentproxy.Start(call, a.settings().Model, log)
	}
	ln, err := a.env.Sandbox.ListenInside(ctx)
	if err != nil {
		return nil, fmt.Errorf("the agent's endpoint in its container: %w", err)
	}
	srv, err := agentproxy.StartOn(ln, call, a.settings().Model, log)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	return srv, nil
}

// agentVars are the values an agent's templates see, for an endpoint at
// origin with token: .Workspace is where the agent sees its workspace,
// the container's workdir when it runs in one.
func (a *attempt) agentVars(spec *cases.Agent, origin, token string) cases.AgentVars {
	ws := a.env.Sandbox.ContainerWorkdir()
	if ws == "" {
		ws = a.ws.Root()
	}
	return cases.AgentVars{Instruction: a.kase.Instruction, Case: a.kase.ID, BaseURL: spec.BaseURLOf(origin), Origin: origin,
		Token: token, Model: a.settings().Model, Workspace: ws}
}

// inImage names the container's image for a message about the agent's
// command ("in image REF (DIGEST): "), "" when there is no container.
func inImage(sb *sandbox.Sandbox) string {
	rec := sb.Record()
	if rec == nil || rec.Image == nil {
		return ""
	}
	return fmt.Sprintf("in image %s (%s): ", rec.Image.Ref, rec.Image.Digest)
}

// withAgentNetwork adds FeatureAgentNetwork to a containment record (a
// copy), saying what an external agent's network reaches.
func withAgentNetwork(rec *events.Containment, inContainer bool) *events.Containment {
	if rec == nil {
		return nil
	}
	out := *rec
	f := events.ContainmentFeature{Name: FeatureAgentNetwork, State: events.ContainmentOff, Detail: agentNetworkHost}
	if inContainer {
		f = events.ContainmentFeature{Name: FeatureAgentNetwork, State: events.ContainmentActive, Detail: agentNetworkContainer}
	}
	out.Features = append(slices.DeleteFunc(slices.Clone(rec.Features), func(g events.ContainmentFeature) bool { return g.Name == f.Name }), f)
	slices.SortFunc(out.Features, func(x, y events.ContainmentFeature) int { return strings.Compare(x.Name, y.Name) })
	return &out
}
