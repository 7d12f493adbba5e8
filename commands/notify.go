package commands

import (
	"agt/config"
	"agt/state"
)

// notifySpec is what an agent's supervisor needs of [notify]; nil when it tells nobody. A
// desktop notification needs notify-send, where it is installed.
func notifySpec(n config.Notify) *state.NotifySpec {
	desktop := n.Desktop && config.DesktopNotifier() != ""
	if !desktop && n.Webhook == "" {
		return nil
	}
	return &state.NotifySpec{Desktop: desktop, Webhook: n.Webhook, MinInterval: state.Duration(n.MinInterval), Link: n.Link}
}

// conversation reports whether a is a conversation agent (ACP, --converse), which waits for
// input once a turn ends instead of exiting.
func conversation(a *state.Agent) bool {
	spec, err := a.ReadSpec()
	return err == nil && (config.StdinConverses(spec.Stdin) || spec.ConverseTurns)
}
