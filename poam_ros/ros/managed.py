"""Managed nodes: the ROS 2 lifecycle (``rclpy.lifecycle``) for sensor_ingest, mapper and planner.

A :class:`ManagedNode` walks the standard state machine (unconfigured -> inactive -> active,
and back) through four hooks of its subclass:

* :meth:`~ManagedNode._configure` declares the parameters, checks them and builds the core
  objects, publishers, services and the timers that run while configured (diagnostics). A
  :class:`ConfigError`, or one of the class's ``start_errors`` (a file it cannot use), fails
  the transition with the reason in the log: what the hook had made is released and the node
  stays unconfigured and alive; once the parameter is set right, configure again;
* :meth:`~ManagedNode._activate` starts the subscriptions and the timers that act;
* :meth:`~ManagedNode._deactivate` pauses, keeping the node's state (the mapper's model and
  journal, the ingest's poses, the planner's plan);
* :meth:`~ManagedNode._cleanup` releases what ``_configure`` built beyond ROS entities
  (threads, files); shutdown, from any state, deactivates and cleans up as needed.

The ROS entities (publishers, subscriptions, services, clients, timers) and the parameter
callbacks a hook creates are recorded and destroyed by the base: those of ``_activate`` on
deactivate, those of ``_configure`` on cleanup (or when configure fails), so a subclass
never tracks them itself. Parameters stay declared for the node's life, with the values a
supervisor set: a parameter read-only for a plain node is read-only only while the node is
configured (set it between cleanup and configure). A value given at start that ROS refuses
(a wrong type, out of range) leaves the parameter declared without a value, and configure
fails until one is set.

Publishing: data outputs are rclpy lifecycle publishers (``create_lifecycle_publisher``),
enabled on activate and disabled on deactivate before the hooks' subscriptions stop. They
drop a message published while inactive, so a worker thread that finishes an update or a
plan just after a deactivate cannot leak it, without a check of the state at every call
site; what must not be lost that way (the planner's plan, the mapper's map) the node sends
again on activation. ``/diagnostics`` is a plain publisher, created on configure: an inactive
node still reports, with its lifecycle state in its status (:mod:`poam_ros.diagnostics`).

``autostart`` (:class:`~poam_ros.params.node_settings.LifecycleSettings`, default true)
configures and activates in the constructor, as a plain node starts: a failed configure then
raises its error, which :func:`~poam_ros.ros.run.run_node` turns into one fatal line and exit
status 1. With ``autostart: false`` a supervisor drives the node through the lifecycle_msgs
services (``~/change_state``, ``~/get_state``), as Nav2's lifecycle manager does.
"""

from __future__ import annotations

import copy
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

from rcl_interfaces.msg import SetParametersResult
from rclpy.client import Client
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.lifecycle import LifecyclePublisher, State, TransitionCallbackReturn
from rclpy.lifecycle import Node as LifecycleNode
from rclpy.parameter import Parameter
from rclpy.publisher import Publisher
from rclpy.service import Service
from rclpy.subscription import Subscription
from rclpy.timer import Timer

from poam_ros.params import ConfigError
from poam_ros.params.node_settings import LifecycleSettings
from poam_ros.ros.parameter_sources import check_parameter_sources
from poam_ros.ros.parameters import declare_config
from poam_ros.ros.run import ThrottledWarnings

SUCCESS, FAILURE, ERROR = (TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE,
                           TransitionCallbackReturn.ERROR)
CONFIGURED = ("inactive", "active")  # the states in which the core objects exist


class ManagedNode(ThrottledWarnings, LifecycleNode):
    """A lifecycle node of the package; see the module docstring. ``node_kwargs`` go to
    :class:`rclpy.node.Node`."""

    #: errors besides ConfigError that fail configure as a bad value does (a file named by a
    #: parameter that cannot be used), rather than as a fault in the node
    start_errors: tuple[type[Exception], ...] = ()
    # Class-wide at first: rclpy's Node.__init__ declares parameters and adds callbacks
    # before ours runs.
    _recording: list | None = None  # the running hook's list of what it creates
    _configuring = False

    def __init__(self, node_name: str, **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)
        self._warned = {}
        self.finalized = threading.Event()  # set by the shutdown transition
        self._held: dict[str, list] = {"configure": [], "activate": []}
        self._fixed: set[str] = set()  # read-only while configured
        self._refused: dict[str, str] = {}  # parameter -> why ROS refused its start value
        self._failure: BaseException | None = None  # the last failed transition's error
        self._autostarting = False
        # Declared before any hook, so that they live as long as the node.
        settings = declare_config(self, LifecycleSettings, read_only=["autostart"])
        self.add_on_set_parameters_callback(self._refuse_fixed)
        self.add_post_set_parameters_callback(self._forget_refusals)
        if settings.autostart:
            self._autostart()

    # -------------------------------------------------------------- subclass hooks
    def _configure(self) -> None:
        raise NotImplementedError

    def _activate(self) -> None:
        """Start the subscriptions and timers that act (the base records them)."""

    def _deactivate(self) -> None:
        """Pause beyond stopping what ``_activate`` created (the base destroys that)."""

    def _cleanup(self) -> None:
        """Release what ``_configure`` built beyond ROS entities; also after a configure
        that failed part-way, so every step must allow for what was never built."""

    # ------------------------------------------------------------------ the state
    @property
    def lifecycle_state(self) -> str:
        """The lifecycle state's label: unconfigured, inactive, active, finalized (or a
        transition's, e.g. configuring, while one runs)."""
        return self._state_machine.current_state[1]

    # ------------------------------------------------------------- transitions
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        self._configuring = True
        try:
            if self._refused:
                raise ConfigError("; ".join(f"{name}: the value given at start was refused "
                                            f"({why}); set one"
                                            for name, why in self._refused.items()))
            with self._recorded("configure"):
                check_parameter_sources(self)  # the files that give it nothing; required values
                self._configure()
        except (ConfigError, *self.start_errors) as error:
            self._release_configuration()
            return self._failed(error, FAILURE, "configure failed")
        except Exception as error:  # noqa: BLE001 - a fault in the node: the reason logged
            self._release_configuration()
            return self._failed(error, ERROR, "configure failed on an unexpected error")
        finally:
            self._configuring = False
        return SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        super().on_activate(state)  # the lifecycle publishers first: _activate may publish
        try:
            with self._recorded("activate"):
                self._activate()
        except Exception as error:  # noqa: BLE001 - back to inactive, the reason logged
            self._stop_activity(state)
            return self._failed(error, FAILURE, "activate failed")
        return SUCCESS

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        return self._logged("deactivate", lambda: self._stop_activity(state))

    def on_cleanup(self, state: State) -> TransitionCallbackReturn:
        return self._logged("cleanup", self._release_configuration)

    def on_shutdown(self, state: State) -> TransitionCallbackReturn:
        """From any state: ``state`` is the one it left."""
        def shut_down() -> None:
            try:
                if state.label == "active":
                    self._stop_activity(state)
                if state.label in CONFIGURED:
                    self._release_configuration()
            finally:
                self.finalized.set()
        return self._logged("shutdown", shut_down)

    def on_error(self, state: State) -> TransitionCallbackReturn:
        """A transition raised: release everything and go back to unconfigured."""
        self._release("activate")
        return self._logged("error processing", self._release_configuration)

    def _logged(self, what: str, step: Callable[[], None]) -> TransitionCallbackReturn:
        """``step``'s error logged (rclpy would turn it into ERROR without a word)."""
        try:
            step()
        except Exception as error:  # noqa: BLE001 - the transition reports it
            return self._failed(error, ERROR, f"{what} failed")
        return SUCCESS

    def _stop_activity(self, state: State) -> None:
        self._release("activate")
        self._deactivate()
        super().on_deactivate(state)  # disables the lifecycle publishers

    def _release_configuration(self) -> None:
        self._cleanup()
        self._release("configure")

    def _failed(self, error: BaseException, result: TransitionCallbackReturn,
                what: str) -> TransitionCallbackReturn:
        """Keep ``error`` for autostart, which raises it; log it for a supervisor's call."""
        self._failure = error
        if not self._autostarting:  # a fault's type says more than its text alone
            self.get_logger().error(f"{what}: {error!r}" if result == ERROR
                                    else f"{what}: {error}")
        return result

    def _autostart(self) -> None:
        self._autostarting = True
        try:
            for trigger in (self.trigger_configure, self.trigger_activate):
                if trigger() != SUCCESS:
                    raise self._failure or RuntimeError(f"{trigger.__name__} failed")
        except BaseException:
            self.destroy_node()
            raise
        finally:
            self._autostarting = False

    def destroy_node(self) -> None:
        """Shut down (from whatever state) and leave the graph; idempotent."""
        if not self.finalized.is_set() and self.lifecycle_state in (
                "unconfigured", *CONFIGURED):
            self.trigger_shutdown()
        self.finalized.set()
        super().destroy_node()

    # -------------------------------------------------- what the hooks create
    @contextmanager
    def _recorded(self, hook: str) -> Iterator[None]:
        """Record the ROS entities and parameter callbacks created inside, as ``hook``'s."""
        before = set(map(id, self._entities()))
        self._recording = self._held[hook]
        try:
            yield
        finally:
            self._recording = None
            self._held[hook].extend(entity for entity in self._entities()
                                    if id(entity) not in before)

    def _entities(self) -> list:
        return [*self.publishers, *self.subscriptions, *self.services, *self.clients,
                *self.timers]

    def _release(self, hook: str) -> None:
        """Destroy what ``hook`` created, the newest first."""
        held, self._held[hook] = self._held[hook], []
        for item in reversed(held):
            if isinstance(item, tuple):  # (remove, callback) of a parameter callback
                remove, callback = item
                remove(callback)
            else:
                self._destroy(item)

    def _destroy(self, entity) -> None:
        if isinstance(entity, LifecyclePublisher):
            self.destroy_lifecycle_publisher(entity)
        elif isinstance(entity, Publisher):
            self.destroy_publisher(entity)
        elif isinstance(entity, Subscription):
            self.destroy_subscription(entity)
        elif isinstance(entity, Service):
            self.destroy_service(entity)
        elif isinstance(entity, Client):
            self.destroy_client(entity)
        elif isinstance(entity, Timer):
            self.destroy_timer(entity)

    def _record_callback(self, remove: Callable, callback: Callable) -> None:
        if self._recording is not None:
            self._recording.append((remove, callback))

    def add_pre_set_parameters_callback(self, callback) -> None:
        super().add_pre_set_parameters_callback(callback)
        self._record_callback(self.remove_pre_set_parameters_callback, callback)

    def add_on_set_parameters_callback(self, callback):
        handle = super().add_on_set_parameters_callback(callback)
        self._record_callback(self.remove_on_set_parameters_callback, callback)
        return handle

    def add_post_set_parameters_callback(self, callback) -> None:
        super().add_post_set_parameters_callback(callback)
        self._record_callback(self.remove_post_set_parameters_callback, callback)

    # ------------------------------------------------------------- parameters
    def declare_parameter(self, name, value=None, descriptor=None, ignore_override=False):
        """As rclpy's, except while configuring: a parameter an earlier configure declared
        keeps its value (a supervisor may have set it since), one declared read-only is
        read-only only while configured, and one whose given value ROS refuses is declared
        without a value (so that a supervisor can set one) before the refusal propagates."""
        if not self._configuring:
            return super().declare_parameter(name, value, descriptor, ignore_override)
        if self.has_parameter(name):
            return self.get_parameter_or(name)
        if descriptor is not None and descriptor.read_only:
            descriptor = copy.copy(descriptor)
            descriptor.read_only = False
            descriptor.description += " (read-only while the node is configured)"
            self._fixed.add(name)
        try:
            return super().declare_parameter(name, value, descriptor, ignore_override)
        except (InvalidParameterTypeException, InvalidParameterValueException) as error:
            if descriptor is not None and descriptor.type:
                super().declare_parameter(name, Parameter.Type(descriptor.type), descriptor,
                                          ignore_override=True)
                self._refused[name] = str(error)
            raise

    def _refuse_fixed(self, parameters: list[Parameter]) -> SetParametersResult:
        fixed = [p.name for p in parameters if p.name in self._fixed]
        if fixed and self.lifecycle_state in CONFIGURED:
            return SetParametersResult(successful=False, reason=(
                f"{', '.join(fixed)}: read-only while the node is configured (deactivate, "
                f"cleanup, set it, configure)"))
        return SetParametersResult(successful=True)

    def _forget_refusals(self, parameters: list[Parameter]) -> None:
        for parameter in parameters:
            self._refused.pop(parameter.name, None)
