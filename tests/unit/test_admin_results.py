"""Each admin operation has one result model (`schemas.admin`), and the admin group's
answers are instances of it."""

from __future__ import annotations

from typing import get_args

from engine.upkeep.jobs import JobRecord
from schemas.admin import ADMIN_RESULTS, JobRecordOut, result_of
from schemas.requests import AdminOp, AdminReply
from services.groups.admin.operations import job_json


def test_every_admin_operation_has_a_result_model() -> None:
    assert set(ADMIN_RESULTS) == set(get_args(AdminOp))


def test_a_job_record_reads_as_its_model_and_keeps_its_keys() -> None:
    record = JobRecord(
        job_id="j1",
        type="consolidate",
        status="completed",
        params={"agentWallet": "a"},
        created_at=1,
        completed_at=2,
        attempts=1,
        result={"merged": 3},
        error=None,
        error_type=None,
    )
    reply = AdminReply(result=job_json(record))
    job = result_of(reply, JobRecordOut)
    assert job.jobId == "j1"
    assert job.agentWallet == "a"
    assert job.data == {"merged": 3}
    assert job.model_dump(exclude_unset=True) == reply.result
