"""Adapters: implementations of the ports in `engine.ports`, named by technology.

Only modules in this package may import drivers (onnxruntime, pymongo, redis, httpx, ...).
"""
