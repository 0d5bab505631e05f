package launchenv

import (
	"reflect"
	"testing"
)

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want Job
		ok   bool
		bad  bool
	}{
		{name: "none", env: map[string]string{"HOME": "/root"}},
		{name: "slurm step", env: map[string]string{
			"SLURM_PROCID": "5", "SLURM_STEP_NUM_TASKS": "8", "SLURM_NTASKS": "8", "SLURM_JOB_ID": "4242",
			"SLURM_STEP_ID": "0", "SLURM_NODEID": "1", "SLURM_LOCALID": "1"},
			want: Job{Launcher: "slurm", Rank: 5, Size: 8, ID: "4242.0", Node: 1, LocalRank: 1}, ok: true},
		{name: "slurm batch script, no step", env: map[string]string{
			"SLURM_PROCID": "0", "SLURM_NTASKS": "8", "SLURM_JOB_ID": "4242"}},
		{name: "open mpi", env: map[string]string{
			"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "0",
			"PMIX_NAMESPACE": "prterun-host-123@1"},
			want: Job{Launcher: "openmpi", Rank: 2, Size: 4, ID: "prterun-host-123@1", Node: -1, LocalRank: 0}, ok: true},
		{name: "open mpi 4", env: map[string]string{
			"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "1", "OMPI_MCA_ess_base_jobid": "77"},
			want: Job{Launcher: "openmpi", Rank: 0, Size: 1, ID: "77", Node: -1, LocalRank: -1}, ok: true},
		{name: "mpich hydra", env: map[string]string{"PMI_RANK": "3", "PMI_SIZE": "6", "MPI_LOCALRANKID": "1"},
			want: Job{Launcher: "mpich", Rank: 3, Size: 6, Node: -1, LocalRank: 1}, ok: true},
		{name: "rank without size", env: map[string]string{"PMI_RANK": "3"}, bad: true},
		{name: "rank out of range", env: map[string]string{"OMPI_COMM_WORLD_RANK": "4", "OMPI_COMM_WORLD_SIZE": "4"}, bad: true},
		{name: "not a number", env: map[string]string{"PMI_RANK": "x", "PMI_SIZE": "2"}, bad: true},
		{name: "negative", env: map[string]string{"PMI_RANK": "-1", "PMI_SIZE": "2"}, bad: true},
		{name: "bad node", env: map[string]string{"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1", "SLURM_NODEID": "n1"}, bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := detect(lookupIn(tc.env))
			if tc.bad {
				if err == nil {
					t.Fatalf("no error, got %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
