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


def test_generated_job_id():
    assert JobIdentity.from_environment(None, environ={}).job_id.startswith("job-")
