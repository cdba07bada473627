"""What each micro-batch of a streaming run did, carried from where Spark runs the batch's
writer to the run that reports it.

Spark calls a query's foreachBatch function in this process for a local session, but in the
Spark Connect server's own Python worker for a remote one: whatever that function changes in
memory never reaches the client (a run through Spark Connect reported no input at all). So every
batch leaves its figures as one JSON file in a folder beside the query's checkpoint, which both
sides reach (the client keeps its task-key note there too), and the run folds new files into its
`RunReport` as they appear. A batch Spark runs again after a failure rewrites its own file.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from streamjoin.runtime.report import RunReport

FOLDER = "streamjoin-batch-figures"


class BatchFigures:
    def __init__(self, checkpoint: Path) -> None:
        self.folder = checkpoint / FOLDER
        self.folded: set[int] = set()
        self.stream_times: dict[int, int] = {}  # task -> stream time, this run

    def clear(self) -> None:
        """A new run: figures an earlier run left (it stopped before folding them) are not this run's."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)

    def write(self, batch_id: int, figures: dict) -> None:
        staged = self.folder / f".{batch_id}.json.tmp"
        staged.write_text(json.dumps(figures))
        os.replace(staged, self.folder / f"{batch_id}.json")  # a reader never sees half a file

    def fold_into(self, report: RunReport) -> int:
        """Adds the batches written since the last call to `report`, in batch order; how many."""
        new = sorted(batch for batch in (int(path.stem) for path in self.folder.glob("*.json"))
                     if batch not in self.folded)
        for batch in new:
            report.add_batch(json.loads((self.folder / f"{batch}.json").read_text()), self.stream_times)
            self.folded.add(batch)
        return len(new)

