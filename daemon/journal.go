// Package daemon is zspool's long-running service: it watches the spool,
// claims each completed acquisition into the state directory, converts it
// with a crash-safe journal, releases the raw file only once every object is
// stored, and reports through logs, metrics and systemd.
package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
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
	ID         string    `json:"id"`       // the manifest's stem: unique in the spool at a time
	State      string    `json:"state"`    // see the State constants
	Manifest   string    `json:"manifest"` // manifest file name
	Data       string    `json:"data"`     // raw file name
	Name       string    `json:"name"`     // dataset name
	LayersDone int64     `json:"layers_done"`
	Attempts   int       `json:"attempts"`
	LastError  string    `json:"last_error,omitempty"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
}

// Upload is an open multipart upload a crash could leave behind.
type Upload struct {
	Job string `json:"job"`
	ID  string `json:"id"`
}

var (
	jobsBucket    = []byte("jobs")
	uploadsBucket = []byte("uploads")
)

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
		for _, b := range [][]byte{jobsBucket, uploadsBucket} {
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

// Delete removes a job record and any uploads it still lists.
func (j *Journal) Delete(id string) error {
	return j.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(jobsBucket).Delete([]byte(id)); err != nil {
			return err
		}
		ub := tx.Bucket(uploadsBucket)
		c := ub.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var u Upload
			if json.Unmarshal(v, &u) == nil && u.Job == id {
				if err := c.Delete(); err != nil {
					return err
				}
			}
		}
		return nil
	})
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

// AddUpload records an open multipart upload of key.
func (j *Journal) AddUpload(key string, u Upload) error {
	b, _ := json.Marshal(u)
	return j.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(uploadsBucket).Put([]byte(key), b) })
}

// DoneUpload forgets a completed or aborted upload.
func (j *Journal) DoneUpload(key string) error {
	return j.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(uploadsBucket).Delete([]byte(key)) })
}

// Uploads lists every recorded open upload by key.
func (j *Journal) Uploads() (map[string]Upload, error) {
	ups := map[string]Upload{}
	err := j.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(uploadsBucket).ForEach(func(k, v []byte) error {
			var u Upload
			if err := json.Unmarshal(v, &u); err != nil {
				return err
			}
			ups[string(k)] = u
			return nil
		})
	})
	return ups, err
}
