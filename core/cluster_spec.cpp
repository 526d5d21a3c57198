// core/cluster_spec.cpp — being written
