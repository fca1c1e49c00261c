package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/daemon"
	"github.com/zspool/zspool/destination"
	"github.com/zspool/zspool/engine"
	"github.com/zspool/zspool/pipeline"
)

const defaultConfigPath = "/etc/zspool/zspool.yaml"

// daemonOptions turns the config file into the daemon's options.
func daemonOptions(c *config.Daemon) (daemon.Options, error) {
	if err := engine.Check(c.Engine); err != nil {
		return daemon.Options{}, fmt.Errorf("engine: %w", err)
	}
	o := daemon.Options{
		SpoolDir: c.SpoolDir, StateDir: c.StateDir, FailedDir: c.FailedDir,
		Release: c.Release.Policy, ArchiveDir: c.Release.ArchiveDir,
		Dest: destination.Config{Destination: c.Destination, Retry: c.Retry,
			MemoryBudget: int64(c.MemoryBudget) / int64(max(1, c.ConcurrentJobs))},
		ConcurrentJobs: c.ConcurrentJobs, MemoryBudget: int64(c.MemoryBudget),
		Settle: time.Duration(c.Settle), RescanInterval: time.Duration(c.RescanInterval),
		ShutdownTimeout: time.Duration(c.ShutdownTimeout),
		JobBackoff:      time.Duration(c.Retry.JobBackoff), JobMaxBackoff: time.Duration(c.Retry.JobMaxBackoff),
		Version: buildVersion(), ZstdEncoder: c.ZstdEncoder, ZstdChecksum: c.ZstdChecksum, Overwrite: c.Overwrite,
		GPU: engine.PlansGPU(c.Engine), Engine: c.Engine,
		Revision: buildRevision(), EngineName: c.Engine,
		Announce: daemon.AnnounceOptions{Webhook: c.Notify.Webhook, Exec: c.Notify.Exec, Queue: c.Notify.Queue,
			Timeout: time.Duration(c.Notify.Timeout)},
		ArchiveMaxAge: time.Duration(c.Release.ArchiveMaxAge), ArchiveMaxBytes: int64(c.Release.ArchiveMaxBytes),
	}
	if c.Metrics.Enabled() {
		o.MetricsListen = c.Metrics.Listen
	}
	return o, nil
}

// jsonLogger logs JSON lines (journald and log shippers parse them).
func jsonLogger(w io.Writer, level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log_level: %w", err)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(w), lvl)), nil
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "[--config] FILE", stderr)
	path := fs.String("config", defaultConfigPath, "daemon config file (YAML)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 1 {
		*path = fs.Arg(0)
	}
	// Every message of the daemon is a JSON line, its fatal ones too: a
	// config error is logged by a bootstrap logger before the configured
	// one exists.
	boot, _ := jsonLogger(stderr, "info")
	cfg, err := config.LoadDaemon(*path)
	if err != nil {
		boot.Error("cannot start: config", zap.String("config", *path), zap.Error(err))
		return logged(2, err)
	}
	log, err := jsonLogger(stderr, cfg.LogLevel)
	if err != nil {
		boot.Error("cannot start: config", zap.String("config", *path), zap.Error(err))
		return logged(2, err)
	}
	defer log.Sync()
	opt, err := daemonOptions(cfg)
	if err != nil {
		log.Error("cannot start: config", zap.String("config", *path), zap.Error(err))
		return logged(2, err)
	}
	// The first SIGTERM/SIGINT stops intake and lets running shard layers
	// finish; a second one exits at once — the journal makes that safe.
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	go watchSignals(log, sigs, ctx.Done(), stop, func(code int) { _ = log.Sync(); os.Exit(code) })
	// The GPU context is made once and serves every job.
	opt.Devices = &engine.Devices{}
	defer opt.Devices.Close()
	d, err := daemon.New(runCtx, log, opt)
	if err != nil {
		log.Error("cannot start", zap.Error(err))
		return logged(1, err)
	}
	if err := d.Run(runCtx); err != nil {
		log.Error("stopped on a fatal error", zap.Error(err))
		return logged(1, err)
	}
	return nil
}

func cmdConfig(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "Usage: zspool config check [--config FILE]")
		return &exitError{code: 2, err: errUsageShown}
	}
	fs := newFlags("config check", "[--config] FILE [--offline]", stderr)
	path := fs.String("config", defaultConfigPath, "daemon config file (YAML)")
	offline := fs.Bool("offline", false, "do not probe the destination")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() == 1 {
		*path = fs.Arg(0)
	}
	cfg, err := config.LoadDaemon(*path)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	opt, err := daemonOptions(cfg)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	fmt.Fprintf(stdout, "# %s: valid; effective configuration:\n%s", *path, cfg.Redacted())
	if engine.GPUBuilt {
		desc, _ := engine.GPUStatus()
		fmt.Fprintf(stdout, "# engine %s; GPU: %s\n", cfg.Engine, desc)
	} else {
		fmt.Fprintf(stdout, "# engine %s; this binary has the CPU engine only\n", cfg.Engine)
	}
	host, where := config.HostMemory()
	fmt.Fprintf(stdout, "# memory: %s for %d concurrent job(s); the host allows %s (%s), and the default budget is an eighth of it, at least %s\n",
		cfg.MemoryBudget, cfg.ConcurrentJobs, config.Size(host), where, config.MinDefaultMemoryBudget)
	fmt.Fprintf(stdout, "# zstd encoder: %s\n", describeZstdEncoder(cfg.ZstdEncoder))
	fmt.Fprintf(stdout, "# zstd checksum: %s\n", describeZstdChecksum(cfg.ZstdChecksum))
	var problems []string
	for _, dir := range []string{opt.SpoolDir, filepath.Dir(opt.StateDir)} {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			problems = append(problems, fmt.Sprintf("%s: not an existing directory", dir))
		}
	}
	if *offline {
		fmt.Fprintln(stdout, "# destination not probed (--offline)")
	} else {
		log, _ := newLogger(io.Discard, "error")
		if _, err := destination.Open(ctx, log, opt.Dest); err != nil {
			problems = append(problems, "destination: "+err.Error())
		} else {
			fmt.Fprintf(stdout, "# destination %s: reachable, bucket and credentials ok\n", opt.Dest.URL)
		}
	}
	if len(problems) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%s:\n  %s", *path, strings.Join(problems, "\n  "))}
	}
	return nil
}

// describeZstdEncoder says what zstd_encoder means for `config check`,
// whose effective configuration leaves the key out when it is empty.
func describeZstdEncoder(name string) string {
	switch name {
	case pipeline.EncoderDefault:
		if engine.GPUBuilt {
			return "the engine's default (window on the CPU, the GPU's own encoder on the GPU)"
		}
		return "the engine's default (window)"
	case pipeline.EncoderWindow:
		return "window (zstdlit's windowed encoder, at compression.level)"
	case pipeline.EncoderSegmented:
		return "segmented (zstdlit; compression.level is not used)"
	case pipeline.EncoderLit:
		return "segmented, by its old name lit (zstdlit; compression.level is not used)"
	}
	return name
}

// describeZstdChecksum says what zstd_checksum means for `config check`.
func describeZstdChecksum(on bool) string {
	if on {
		return "on (each frame ends with the low 4 bytes of its content's XXH64)"
	}
	return "off (the shard index's crc32c and the store's per-object checksum cover the chunks)"
}

// watchSignals stops the daemon at the first signal and exits at the
// second. Signals are counted on sigs alone: main's NotifyContext sees the
// same SIGTERM, so done closing says nothing about how many came (counting
// it too made one SIGTERM look like two, and the daemon exit 130 at once).
func watchSignals(log *zap.Logger, sigs <-chan os.Signal, done <-chan struct{}, stop func(), exit func(code int)) {
	for first := true; ; {
		select {
		case s := <-sigs:
			if first {
				first = false
				log.Info("signal: stopping", zap.String("signal", s.String()))
				stop()
				continue
			}
			log.Warn("second signal: exiting now; the journal resumes the work", zap.String("signal", s.String()))
			exit(130)
			return
		case <-done:
			done = nil
			stop()
		}
	}
}
