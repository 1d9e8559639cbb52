"""The fault proxy, moved to :mod:`jobqueues.emulator.chaos.proxy` (``jobqueues local up --chaos`` uses it too)."""

from jobqueues.emulator.chaos.proxy import Fault, FaultProxy, Observer, Rule, chaos_rule, random_faults

__all__ = ["Fault", "FaultProxy", "Observer", "Rule", "chaos_rule", "random_faults"]
