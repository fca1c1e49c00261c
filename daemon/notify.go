package daemon

import (
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
	"go.uber.org/zap"
)

// notifier speaks systemd's notify protocol when NOTIFY_SOCKET is set and
// is silent otherwise.
type notifier struct {
	log      *zap.Logger
	watchdog time.Duration // 0 when systemd asked for no watchdog
}

func newNotifier(log *zap.Logger) *notifier {
	n := &notifier{log: log}
	if d, err := sd.SdWatchdogEnabled(false); err == nil && d > 0 {
		n.watchdog = d
	}
	return n
}

func (n *notifier) send(state string) {
	if _, err := sd.SdNotify(false, state); err != nil {
		n.log.Warn("systemd notify failed", zap.String("state", state), zap.Error(err))
	}
}

func (n *notifier) Ready()    { n.send(sd.SdNotifyReady) }
func (n *notifier) Stopping() { n.send(sd.SdNotifyStopping) }
func (n *notifier) Watchdog() { n.send(sd.SdNotifyWatchdog) }

// Status sets the one-line status `systemctl status` shows.
func (n *notifier) Status(s string) { n.send("STATUS=" + s) }

// WatchdogEvery is how often to ping: half of systemd's timeout, or a
// minute when there is none (the loop ticks anyway for healthz).
func (n *notifier) WatchdogEvery() time.Duration {
	if n.watchdog > 0 {
		return n.watchdog / 2
	}
	return time.Minute
}
