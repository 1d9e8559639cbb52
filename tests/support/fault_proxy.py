"""The fault proxy, moved to :mod:`local_emulator.chaos.proxy` (``jobqueues local up --chaos`` uses it too)."""

from local_emulator.chaos.proxy import Fault, FaultProxy, Observer, Rule, chaos_rule, random_faults

__all__ = ["Fault", "FaultProxy", "Observer", "Rule", "chaos_rule", "random_faults"]
