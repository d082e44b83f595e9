"""Job, pod and rank fields from the Kubernetes downward API and torchrun environment."""
import socket

from precisionprobe._job_identity import JobIdentity


def test_kubernetes_and_torchrun_variables():
    identity = JobIdentity.from_environment("j", environ={
        "POD_NAME": "dlrm-worker-3", "POD_NAMESPACE": "ml", "POD_IP": "10.1.2.3",
        "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "8"})
    assert (identity.pod, identity.namespace, identity.ip) == ("dlrm-worker-3", "ml", "10.1.2.3")
    assert (identity.rank, identity.local_rank, identity.world_size) == (3, 1, 8)


def test_defaults_outside_kubernetes_and_torchrun():
    identity = JobIdentity.from_environment(None, environ={"PRECISIONPROBE_JOB_ID": "from-env",
                                                           "RANK": "not-a-number"})
    assert identity.job_id == "from-env"
    assert (identity.pod, identity.namespace) == (socket.gethostname(), "")
    assert (identity.rank, identity.local_rank, identity.world_size) == (0, 0, 1)


def test_a_rank_no_event_line_can_hold_is_recorded_as_the_default_with_a_warning(capsys):
    """Past 64 bits, every event line of the process was malformed to the readers, and the run
    held no events: the default is recorded instead, and said once."""
    for _ in range(2):
        identity = JobIdentity.from_environment("j", environ={"RANK": "99999999999999999999", "WORLD_SIZE": "8"})
        assert (identity.rank, identity.world_size) == (0, 8)
    assert capsys.readouterr().err == ("precisionprobe: warning: environment variable RANK is "
                                       "'99999999999999999999', not a 64-bit integer; the events record rank 0\n")


def test_generated_job_id():
    assert JobIdentity.from_environment(None, environ={}).job_id.startswith("job-")


def test_the_job_header_hides_credentials_of_the_command_line():
    """Event files are shared and read back by layer_jobs: a token or password on the training
    command line is stored as ***, and the rest of the command as it was."""
    import json

    from precisionprobe._event_format import job_header
    command = ["python3", "train.py", "--hf-token=hf_SECRET", "--api-key", "k-123", "--lr", "0.1",
               "--data", "https://user:p@ss/w@host/data", "AWS_SECRET_ACCESS_KEY=zz", "-k", "3",
               "--use_auth_token", "--output_dir", "out", "--pad_token_id", "0", "--set=api_key=XYZ",
               "--header", "Authorization: Bearer abc", "GITHUB_PAT=ghp_x"]
    header = json.loads(job_header(JobIdentity.from_environment(job_id="j"), command=command, torch_version="2",
                                   start_time_ns=0, parameters=1, model="M", clock="cpu", package_version="1"))
    assert header["command"] == ["python3", "train.py", "--hf-token=***", "--api-key", "***", "--lr", "0.1",
                                 "--data", "https://user:***@host/data", "AWS_SECRET_ACCESS_KEY=***", "-k", "3",
                                 "--use_auth_token", "--output_dir", "out", "--pad_token_id", "0", "--set=api_key=***",
                                 "--header", "Authorization: Bearer ***", "GITHUB_PAT=***"]
    for secret in ("hf_SECRET", "k-123", "p@ss", "zz", "XYZ", "abc", "ghp_x"):
        assert secret not in json.dumps(header)
