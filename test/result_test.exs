defmodule ExZarr.ResultTest do
  use ExUnit.Case, async: true
  doctest ExZarr.Result
end
