# Copyright 2026 cl_vision_nodes maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
Which nodes an eval runs on a bag's camera, and how each is wired to the bag's topics.

Raw images are rectified on the way in (a rectify_node helper for the mono nodes, disparity_node's
own ``rectify``), compressed ones are read through ``image_transport``; a node the camera cannot
feed is left out with a note, or refused when it was asked for by name.
"""
from __future__ import annotations

from dataclasses import dataclass
import importlib.util

from cl_vision_nodes.bags import layout
from cl_vision_nodes.camera.schema import RECTIFY_SCHEMA
from cl_vision_nodes.errors import DataFormatError
from cl_vision_nodes.evaluation.cameras import Cameras
from cl_vision_nodes.params import Value
from cl_vision_nodes.processes.nodes import (DIAGNOSTICS_PERIOD_S, HELPER_NAMESPACE, NodeSpec,
                                             SCHEMAS, wired)


@dataclass
class Wiring:
    """The processes of one eval run: helpers (rectify_node) first, then the scored nodes."""

    helpers: list[NodeSpec]
    scored: list[NodeSpec]
    notes: list[str]


def wire(cameras: Cameras, requested: list[str] | None,
         explicit: dict[str, dict[str, Value]]) -> Wiring:
    """
    Return the nodes to run on ``cameras`` and a note for each one left out or adapted.

    Without ``--nodes`` every node the camera can feed runs (disparity needs a stereo pair with
    camera_info); a node named explicitly must be fed. ``explicit`` holds the user's parameters
    per node key: eval adds image_transport for compressed images, rectify for raw pairs and
    diagnostics_period (``DIAGNOSTICS_PERIOD_S``) unless given.
    """
    left, right = cameras.left, cameras.right
    bindings = {'left': left.played, 'left_info': left.info,
                'right': right and right.played, 'right_info': right and right.info}
    transport = {'image_transport': 'compressed' if cameras.compressed else 'raw'}
    helpers, scored, notes = [], [], []
    for key in requested or SCHEMAS:
        schema = SCHEMAS[key]
        user = explicit.get(key, {})
        parameters = {'diagnostics_period': DIAGNOSTICS_PERIOD_S} \
            if 'diagnostics_period' not in user else {}
        module = f'cl_vision_nodes.ros.{schema.node_name}'
        missing = 'a stereo pair with camera_info' if key == 'disparity' and not (
            right and left.info and right.info) else ''
        if importlib.util.find_spec(module) is None:
            notes.append(f'{key}: skipped, {module} is not installed in this version')
            continue
        if missing and requested:
            raise DataFormatError(f"{key} needs {missing}; the bag's camera is "
                                  f"{'a pair without camera_info' if right else 'mono'} "
                                  f'({left.topic})')
        if missing:
            notes.append(f'{key}: skipped, the bag has no {missing}')
            continue
        if key == 'disparity':
            if 'rectify' not in user:
                parameters['rectify'] = cameras.raw
            parameters.update(transport)
            spec = wired(key, schema, layout.CAMERA_NAMESPACE, bindings,
                         {**user, **parameters}, parameters,
                         (left.topic, right.topic, left.info, right.info))
        elif cameras.raw:
            if not helpers:
                own = {**transport, 'diagnostics_period': DIAGNOSTICS_PERIOD_S}
                helpers.append(wired('rectify_left', RECTIFY_SCHEMA, f'{HELPER_NAMESPACE}/left',
                                     bindings, own, own, (left.topic, left.info)))
            rectified = {'left': helpers[0].main_output}
            parameters['image_transport'] = 'raw'
            spec = wired(key, schema, layout.LEFT_NAMESPACE, rectified, {**user, **parameters},
                         parameters, (left.topic, left.info))
        else:
            parameters.update(transport)
            spec = wired(key, schema, layout.LEFT_NAMESPACE, bindings, {**user, **parameters},
                         parameters, (left.topic,))
        scored.append(spec)
    if not scored:
        raise DataFormatError('no node to run: ' + '; '.join(notes))
    done = [f"{' and '.join(s.key for s in scored if s.key != 'disparity')} on "
            f'{helpers[0].main_output} from rectify_node {helpers[0].name} (their latency '
            'includes it)'] if helpers else []
    done += ['disparity_node rectifies the raw pair itself (rectify:=true)'
             for s in scored if s.key == 'disparity' and s.parameters.get('rectify')]
    if done:
        notes.append('raw images rectified on the way in: ' + '; '.join(done))
    return Wiring(helpers, scored, notes)
