"""The cost model (docs/tuning.md, "Cost model"): gradient-boosted trees
(xgboost) over a candidate's loop-nest features and its decisions,
predicting its time relative to AutoSchedule's on the same task, so one
model learns from every task.  Retrained after each batch."""
import math

import numpy as np

# The decisions of AutoSchedule's rules a candidate may change
# (plugins/loop_passes/auto_schedule.cc); each a feature (mean over the
# nests that made it, -1 when none did).
DECISIONS = ("vector.bits", "nest.parallel", "parallel.fuse_outer", "elementwise.unroll", "reduction.chains", "tile.vectors",
             "tile.rows", "tile.rows_outer", "tile.own_rows", "tile.blocks", "tile.panels_outer", "tile.tail", "conv.try_channel_tile",
             "matmul.pack", "matmul.k_block")


def featurize(features, decisions):
    made = {}
    for name, value in decisions:
        made.setdefault(name, []).append(value)
    extra = [float(np.mean(made[d])) if d in made else -1.0 for d in DECISIONS]
    return np.asarray(list(features) + extra, dtype=np.float64)


class CostModel:
    """Ranks candidates by predicted log(time / baseline)."""

    def __init__(self, seed=0):
        self._x, self._y = [], []
        self._model = None
        self._seed = seed

    def add(self, x, time_us, baseline_us):
        self._x.append(x)
        self._y.append(math.log(time_us / baseline_us))

    @property
    def trained(self):
        return self._model is not None

    def fit(self):
        if len(self._y) < 8:
            return
        import xgboost
        data = xgboost.DMatrix(np.stack(self._x), label=np.asarray(self._y))
        params = {"max_depth": 4, "eta": 0.2, "subsample": 0.9, "seed": self._seed, "nthread": 1, "verbosity": 0,
                  "objective": "reg:squarederror"}
        self._model = xgboost.train(params, data, num_boost_round=80)

    def predict(self, xs):
        import xgboost
        return self._model.predict(xgboost.DMatrix(np.stack(xs)))
