"""The start-up CPU boost: decided at admission, recorded on the Pod, given back once started."""
