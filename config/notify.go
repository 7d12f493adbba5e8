package config

import (
	"fmt"
	"net/url"
	"os/exec"
	"time"
)

// Notify is the [notify] table: how a person hears that an agent needs them (it starts to wait
// for them: input, a permission, a plan) or failed.
//
//	[notify]
//	desktop = true                       # notify-send, where it is installed (default with [notify])
//	webhook = "https://chat.example/hook" # a JSON POST: agent, state, reason, question, text
//	bell = true                          # the terminal bell in agt top and agt tail -f (default)
//	min_interval = "20s"                 # one agent notifies at most 3 times in a row, then once per this
//	link = "https://box.example:7480/"   # the page of agt serve that notifications link to
type Notify struct {
	Desktop     bool
	Webhook     string
	Bell        bool
	MinInterval time.Duration
	// Link is the address of agt serve's page as the person's devices reach it; "" links to
	// the agt serve running on the run directory, if any.
	Link string
}

// DefaultNotifyInterval is the least time between an agent's notifications once its burst is
// spent.
const DefaultNotifyInterval = 20 * time.Second

type notifyTable struct {
	Desktop     *bool   `toml:"desktop"`
	Webhook     *string `toml:"webhook"`
	Bell        *bool   `toml:"bell"`
	MinInterval *string `toml:"min_interval"`
	Link        *string `toml:"link"`
}

// merge applies one file's [notify] table. A table turns desktop notifications on unless it
// says otherwise.
func (n *Notify) merge(path string, t *notifyTable) error {
	if t == nil {
		return nil
	}
	n.Desktop = true
	if t.Desktop != nil {
		n.Desktop = *t.Desktop
	}
	if t.Bell != nil {
		n.Bell = *t.Bell
	}
	if t.Webhook != nil {
		if err := validWebhook(*t.Webhook); err != nil {
			return fmt.Errorf("%s: notify.webhook: %v", path, err)
		}
		n.Webhook = *t.Webhook
	}
	if t.Link != nil {
		if err := validLink(*t.Link); err != nil {
			return fmt.Errorf("%s: notify.link: %v", path, err)
		}
		n.Link = *t.Link
	}
	if t.MinInterval != nil {
		d, err := parseDuration(*t.MinInterval)
		if err != nil {
			return fmt.Errorf("%s: notify.min_interval: %v", path, err)
		}
		n.MinInterval = d
	}
	return nil
}

// validWebhook checks a webhook's URL: http or https, with a host ("" turns it off).
func validWebhook(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want an http:// or https:// URL", s)
	}
	return nil
}

// validLink checks the page's address: http or https, a host, no query (a token does not
// belong in it: notifications go to chat services and lock screens) and no fragment (agt adds
// the agent's).
func validLink(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("%q: want an http:// or https:// URL", s)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Errorf("%q: want the page's address alone, without a query, a fragment or a user (the token never travels in notifications)", s)
	}
	return nil
}

// DesktopNotifier is the program that shows desktop notifications, "" when none is installed.
func DesktopNotifier() string {
	p, err := exec.LookPath("notify-send")
	if err != nil {
		return ""
	}
	return p
}
