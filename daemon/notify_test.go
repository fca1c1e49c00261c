package daemon

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zspool/zspool/destination"
)

func TestTheDaemonSendsReadyWatchdogAndStoppingToSystemd(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "200000") // 200 ms: pings every 100 ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))

	h := newHarness(t, destination.Config{}, nil)
	h.start()
	var got []string
	read := func(want string) {
		t.Helper()
		buf := make([]byte, 256)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			_ = conn.SetReadDeadline(deadline)
			n, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("waiting for %s: %v (got %v)", want, err, got)
			}
			msg := strings.TrimSpace(string(buf[:n]))
			got = append(got, msg)
			if msg == want {
				return
			}
		}
		t.Fatalf("no %s (got %v)", want, got)
	}
	read("READY=1")
	read("WATCHDOG=1")
	read("WATCHDOG=1") // it keeps pinging from the main loop
	h.stop()
	read("STOPPING=1")
}
