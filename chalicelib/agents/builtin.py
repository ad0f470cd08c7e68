"""Built-in plugin (to be written): registers through the same hooks as third parties."""
