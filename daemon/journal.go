// Package daemon is zspool's long-running service: it watches the spool,
// claims each completed acquisition into the state directory, converts it
// with a crash-safe journal, releases the raw file only once every object is
// stored, and reports through logs, metrics and systemd.
package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/zspool/zspool/pipeline"
)

// Job states, in order. A job leaves the journal when it is released or
// failed.
const (
	StateClaiming   = "claiming"   // files are being moved into the state dir
	StateProcessing = "processing" // converting; LayersDone says how far
	StateStored     = "stored"     // every object verified; release pending
)

// Job is one acquisition's journal record.
type Job struct {
	ID         string `json:"id"`       // the manifest's stem: unique in the spool at a time
	State      string `json:"state"`    // see the State constants
	Manifest   string `json:"manifest"` // manifest file name
	Data       string `json:"data"`     // raw file name
	Name       string `json:"name"`     // dataset name
	LayersDone int64  `json:"layers_done"`
	// Sealed are shards whose every byte is uploaded, which LayersDone
	// may count, not yet known to be visible: a restart finishes them
	// before it resumes or sweeps the dataset's uploads.
	Sealed    []pipeline.SealedObject `json:"sealed,omitempty"`
	Attempts  int                     `json:"attempts"`
	LastError string                  `json:"last_error,omitempty"`
	// RawSize and RawModTime are the raw file as claimed: it is released
	// only if it still has them, so bytes written after the claim (an
	// acquisition still running) are never deleted unconverted.
	RawSize    int64     `json:"raw_size,omitempty"`
	RawModTime time.Time `json:"raw_mtime,omitempty"`
	// DestChecked records that the destination held no dataset of this
	// name (or overwrite allowed replacing it) before the job wrote its
	// first object; a resumed job does not ask again, since by then the
	// objects there are its own.
	DestChecked bool `json:"dest_checked,omitempty"`
	// Archive is the directory release moves the files into, chosen once
	// so a release redone after a crash reuses it.
	Archive string `json:"archive,omitempty"`
	// Layers is the conversion's shard-layer count (progress is
	// LayersDone of Layers); the rest is the finished conversion's
	// figures, for the job's announcement.
	Layers   int64     `json:"layers,omitempty"`
	BytesIn  int64     `json:"bytes_in,omitempty"`
	BytesOut int64     `json:"bytes_out,omitempty"`
	Seconds  float64   `json:"seconds,omitempty"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// Upload is a multipart upload of one object key that may be open on the
// destination. A record with an empty ID is an intent: written before
// CreateMultipartUpload is sent, so an upload created just before a crash
// (whose id never reached the journal) is still known by its key.
type Upload struct {
	Key string `json:"key"`
	ID  string `json:"id,omitempty"`
	Job string `json:"job"`
}

// uploadKey is the journal key of an upload record: object key and upload
// id, so a retry's new upload of the same key never hides an older one.
func uploadKey(key, id string) []byte { return []byte(key + "\x00" + id) }

var (
	jobsBucket    = []byte("jobs")
	uploadsBucket = []byte("uploads")
	historyBucket = []byte("history")
)

// historyKeep is how many finished jobs the journal remembers for
// `zspool jobs`.
const historyKeep = 200

// Journal is the embedded database of jobs and open uploads. Every write
// is one fsynced bbolt transaction, so a SIGKILL at any moment leaves the
// last committed state.
type Journal struct {
	db *bolt.DB
}

// OpenJournal opens (or creates) the journal at path.
func OpenJournal(path string) (*Journal, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w (is another zspool running on this state dir?)", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{jobsBucket, uploadsBucket, historyBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	return &Journal{db: db}, nil
}

// Close closes the database.
func (j *Journal) Close() error { return j.db.Close() }

// ErrNoJob is returned for an id the journal does not hold.
var ErrNoJob = errors.New("no such job in the journal")

// Put stores a job record.
func (j *Journal) Put(job *Job) error {
	job.Updated = time.Now().UTC()
	b, err := json.Marshal(job)
	if err != nil {
		return err
	}
	return j.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(jobsBucket).Put([]byte(job.ID), b)
	})
}

// Get reads a job record.
func (j *Journal) Get(id string) (*Job, error) {
	var job *Job
	err := j.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(jobsBucket).Get([]byte(id))
		if b == nil {
			return ErrNoJob
		}
		job = &Job{}
		return json.Unmarshal(b, job)
	})
	return job, err
}

// Update changes a job record in one transaction.
func (j *Journal) Update(id string, fn func(*Job)) (*Job, error) {
	var job Job
	err := j.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(jobsBucket)
		b := bk.Get([]byte(id))
		if b == nil {
			return ErrNoJob
		}
		if err := json.Unmarshal(b, &job); err != nil {
			return err
		}
		fn(&job)
		job.Updated = time.Now().UTC()
		nb, err := json.Marshal(&job)
		if err != nil {
			return err
		}
		return bk.Put([]byte(id), nb)
	})
	return &job, err
}

// Delete removes a job record. Its upload records stay: only a sweep that
// found the uploads gone may drop them.
func (j *Journal) Delete(id string) error {
	return j.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(jobsBucket).Delete([]byte(id)) })
}

// Jobs lists every job record.
func (j *Journal) Jobs() ([]*Job, error) {
	var jobs []*Job
	err := j.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(jobsBucket).ForEach(func(_, v []byte) error {
			job := &Job{}
			if err := json.Unmarshal(v, job); err != nil {
				return err
			}
			jobs = append(jobs, job)
			return nil
		})
	})
	return jobs, err
}

// AddUpload records an upload, or with an empty id the intent to start
// one.
func (j *Journal) AddUpload(u Upload) error {
	b, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return j.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(uploadsBucket).Put(uploadKey(u.Key, u.ID), b) })
}

// DoneUpload forgets one completed or aborted upload; the key's intent
// stays until a sweep of its dataset has found nothing left.
func (j *Journal) DoneUpload(key, id string) error {
	return j.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(uploadsBucket).Delete(uploadKey(key, id)) })
}

// DropUploads forgets every record (uploads and intents) whose key
// starts with prefix: a sweep found none of them open any more.
func (j *Journal) DropUploads(prefix string) error {
	return j.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(uploadsBucket).Cursor()
		for k, _ := c.Seek([]byte(prefix)); k != nil && strings.HasPrefix(string(k), prefix); k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Uploads lists every upload and intent record.
func (j *Journal) Uploads() ([]Upload, error) {
	var ups []Upload
	err := j.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(uploadsBucket).ForEach(func(_, v []byte) error {
			var u Upload
			if err := json.Unmarshal(v, &u); err != nil {
				return err
			}
			ups = append(ups, u)
			return nil
		})
	})
	return ups, err
}

// AddHistory remembers a finished job, forgetting the oldest beyond
// historyKeep.
func (j *Journal) AddHistory(o Outcome) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	key := []byte(o.Time.UTC().Format("20060102T150405.000000000Z") + "\x00" + o.Job)
	return j.db.Update(func(tx *bolt.Tx) error {
		hb := tx.Bucket(historyBucket)
		if err := hb.Put(key, b); err != nil {
			return err
		}
		n := 0
		c := hb.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			n++
		}
		for k, _ := c.First(); k != nil && n > historyKeep; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
			n--
		}
		return nil
	})
}

// History lists the remembered finished jobs, newest first.
func (j *Journal) History() ([]Outcome, error) {
	var out []Outcome
	err := j.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(historyBucket).Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			var o Outcome
			if err := json.Unmarshal(v, &o); err != nil {
				return err
			}
			out = append(out, o)
		}
		return nil
	})
	return out, err
}
