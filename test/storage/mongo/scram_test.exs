defmodule ExZarr.Storage.Mongo.SCRAMTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.Mongo.SCRAM

  doctest SCRAM

  describe "SCRAM-SHA-256" do
    @server_first "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"

    defp state, do: elem(SCRAM.client_first("user", "rOprNGfwEbeRWgbNEkqO"), 1)

    test "user names escape = and ," do
      assert {"n,,n=a=2Cb=3Dc,r=N", _} = SCRAM.client_first("a,b=c", "N")
    end

    test "a server that does not extend our nonce, or sends nonsense, is refused" do
      assert SCRAM.client_final(state(), "r=other,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "pencil") ==
               {:error, {:scram, :nonce_mismatch}}

      for bad <- ["", "r=rOprNGfwEbeRWgbNEkqO", "garbage", "r=rOprNGfwEbeRWgbNEkqOx,s=!!,i=4096"] do
        assert {:error, {:scram, _}} = SCRAM.client_final(state(), bad, "pencil")
      end

      for i <- ["0", "-1", "x", "100000000"] do
        first = "r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=" <> i

        assert {:error, {:scram, {:bad_iteration_count, ^i}}} =
                 SCRAM.client_final(state(), first, "p")
      end
    end

    test "the server must prove it knows the password" do
      {:ok, _final, state} = SCRAM.client_final(state(), @server_first, "pencil")

      assert SCRAM.verify_server_final(state, "v=AAAA") ==
               {:error, {:scram, :bad_server_signature}}

      assert SCRAM.verify_server_final(state, "e=invalid-proof") ==
               {:error, {:scram, {:server_error, "invalid-proof"}}}

      assert {:error, {:scram, _}} = SCRAM.verify_server_final(state, "x")

      # the right signature for a different password is wrong for this one
      {:ok, _final, other} = SCRAM.client_final(state(), @server_first, "pencil2")

      assert SCRAM.verify_server_final(other, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") ==
               {:error, {:scram, :bad_server_signature}}
    end

    test "passwords are prepared: non-ASCII spaces, invalid UTF-8" do
      assert SCRAM.saslprep("a\u00A0b") == {:ok, "a b"}
      assert SCRAM.saslprep("plain ASCII ~!") == {:ok, "plain ASCII ~!"}
      assert SCRAM.saslprep(<<0xFF>>) == {:error, {:scram, :invalid_utf8}}
    end
  end
end
