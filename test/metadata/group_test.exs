defmodule ExZarr.Metadata.GroupTest do
  use ExUnit.Case, async: true

  doctest ExZarr.Metadata.Group
end
